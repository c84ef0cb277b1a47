//! `hcpx output ID [--stream stdout|stderr] [--offset N] [--limit N]`: pages through a
//! full capture kept by the MCP server (see docs/mcp.md).

use serde::Serialize;

use crate::Reply;
use crate::captures::{ceil_boundary, floor_boundary};
use crate::context::Context;
use crate::error::{Failure, Reason};
use crate::next::Next;

/// One page of a kept output.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Page<'a> {
    id: &'a str,
    stream: &'a str,
    offset: usize,
    length: usize,
    total: usize,
    /// Where the next page starts; null at the end.
    next_offset: Option<usize>,
    text: &'a str,
}

pub(crate) fn run(
    ctx: &Context,
    id: &str,
    stream: &str,
    offset: usize,
    limit: usize,
) -> Result<Reply, Failure> {
    let stored = ctx.session.captures.get(id, ctx.subject()).ok_or_else(|| {
        let message = if ctx.session.captures.is_on_disk() {
            // A replica: the output may be another's, kept where this one cannot see.
            "no kept output by that id here: a stateless server keeps outputs in its HCP_HOME (the most \
             recent 64 MiB, each for at most an hour), and replicas find each other's only when they \
             share that HCP_HOME (one volume); without it, only the replica that ran the command has it"
        } else {
            "no kept output by that id: outputs live in the MCP server that produced them (the most recent 64 MiB, each for at most an hour)"
        };
        Failure::new(Reason::UnknownOutput, message).next(Next::advice("run the command again"))
    })?;
    let text = if stream == "stderr" {
        &stored.stderr
    } else {
        &stored.stdout
    };
    let (start, end) = page_bounds(text, offset, limit);
    let page = &text[start..end];
    let next = (end < text.len()).then_some(end);
    let data = Page {
        id,
        stream,
        offset: start,
        length: page.len(),
        total: text.len(),
        next_offset: next,
        text: page,
    };
    Ok(Reply::new(&data, page))
}

/// The page of `text` asked for by `offset` and `limit`, on char boundaries (an
/// offset inside a character starts after it). A page takes at most 2 MiB as JSON,
/// whatever the limit: paging is how big output is read, and a message must stay
/// under 9.5 MiB. A page below the end is never empty, even when `limit` is smaller
/// than the character there, so following `nextOffset` always reaches the end.
fn page_bounds(text: &str, offset: usize, limit: usize) -> (usize, usize) {
    let start = ceil_boundary(text, offset);
    let end = floor_boundary(text, start.saturating_add(limit)).max(start);
    let end = crate::mcp::fit::page_end(text, start, end - start, crate::mcp::fit::MAX_PAGE);
    if end == start && start < text.len() {
        return (start, ceil_boundary(text, start + 1));
    }
    (start, end)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// Following `nextOffset` from any offset, with any limit, reads the rest of
        /// the text exactly, one non-empty page at a time.
        #[test]
        fn paging_reads_the_rest_exactly(
            text in "\\PC{0,80}",
            offset in 0_usize..400,
            limit in 0_usize..12,
        ) {
            let mut at = offset;
            let mut read = String::new();
            let first = ceil_boundary(&text, offset);
            loop {
                let (start, end) = page_bounds(&text, at, limit);
                read.push_str(&text[start..end]);
                if end >= text.len() {
                    break;
                }
                prop_assert!(end > start, "an empty page at {start}");
                at = end;
            }
            prop_assert_eq!(read.as_str(), &text[first..]);
        }
    }
}
