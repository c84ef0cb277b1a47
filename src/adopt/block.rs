//! The markdown block `adopt --native` writes into a shell agent's instructions file
//! (`AGENTS.md`, say): between two marks, so that a second run replaces it and
//! `--remove` takes it out, leaving the rest of the file as it was.

/// The marks around hcpx's block in an instructions file.
pub const BLOCK_BEGIN: &str =
    "<!-- hcpx:begin (written by `hcpx adopt --native`; a second run replaces it) -->";
pub const BLOCK_END: &str = "<!-- hcpx:end -->";

/// Puts `block` between the marks, replacing an earlier one (`Some`), or takes the
/// marked block out (`None`).
pub fn edit_block(text: &str, block: Option<&str>) -> String {
    let found = text.find(BLOCK_BEGIN).and_then(|start| {
        text[start..]
            .find(BLOCK_END)
            .map(|end| (start, start + end + BLOCK_END.len()))
    });
    let marked = block.map(|body| format!("{BLOCK_BEGIN}\n{}\n{BLOCK_END}", body.trim_end()));
    match (found, marked) {
        (Some((start, end)), Some(marked)) => format!("{}{marked}{}", &text[..start], &text[end..]),
        (Some((start, end)), None) => {
            // Also the newline after the block and the blank line adopt put before it.
            let after = text[end..].strip_prefix('\n').unwrap_or(&text[end..]);
            let before = text[..start]
                .strip_suffix("\n\n")
                .map_or(&text[..start], |b| &text[..b.len() + 1]);
            format!("{before}{after}")
        }
        (None, Some(marked)) if text.trim().is_empty() => format!("{marked}\n"),
        (None, Some(marked)) => {
            let separator = if text.ends_with('\n') { "\n" } else { "\n\n" };
            format!("{text}{separator}{marked}\n")
        }
        (None, None) => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marked_blocks_are_replaced_not_repeated_and_removable() {
        let original = "# Project rules\n\nUse tabs.\n";
        let added = edit_block(original, Some("first"));
        assert!(added.starts_with(original) && added.contains("first"));
        let again = edit_block(&added, Some("second"));
        assert_eq!(again.matches(BLOCK_BEGIN).count(), 1);
        assert!(again.contains("second") && !again.contains("first"));
        assert_eq!(edit_block(&again, None), original);
        assert_eq!(
            edit_block("", Some("x")),
            format!("{BLOCK_BEGIN}\nx\n{BLOCK_END}\n")
        );
    }
}
