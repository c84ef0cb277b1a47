//! Reading the small text files of `/proc` in one `read` each. std's
//! `read_to_string` first asks for the file's size (`statx` and `lseek`; `/proc`
//! says 0), then reads in pieces that grow from 32 bytes: nine system calls for a
//! process's `status`, six for its `stat`. The resident server reads a dozen such
//! files of every client and the `stat` of each of its ancestors.

use std::path::Path;

/// What the first read asks for: all of a process's `status` or `stat` (a larger
/// file, such as a long mount table, takes more reads, each twice the last).
const FIRST_READ: usize = 4096;

/// The text of `path`.
pub(crate) fn read(path: impl AsRef<Path>) -> std::io::Result<String> {
    read_file(std::fs::File::open(path)?)
}

/// The text of `file` (a `File`, or a reference to one), read to its end.
pub(crate) fn read_file(mut file: impl std::io::Read) -> std::io::Result<String> {
    let mut bytes = vec![0_u8; FIRST_READ];
    let mut filled = 0;
    loop {
        if filled == bytes.len() {
            bytes.resize(bytes.len() * 2, 0);
        }
        match file.read(&mut bytes[filled..]) {
            Ok(0) => break,
            Ok(read) => filled += read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    bytes.truncate(filled);
    String::from_utf8(bytes).map_err(|error| std::io::Error::new(std::io::ErrorKind::InvalidData, error))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_proc_file_reads_as_std_reads_it() {
        let path = Path::new("/proc/self/limits");
        assert_eq!(read(path).unwrap(), std::fs::read_to_string(path).unwrap());
    }

    #[test]
    fn a_file_longer_than_the_first_read_is_read_whole() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("long");
        let text: String = (0..3000).map(|line| format!("{line}\n")).collect();
        assert!(text.len() > 2 * FIRST_READ);
        std::fs::write(&path, &text).unwrap();
        assert_eq!(read(&path).unwrap(), text);
    }

    #[test]
    fn a_file_that_is_not_text_is_an_error() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("binary");
        std::fs::write(&path, [0xff, 0xfe]).unwrap();
        assert_eq!(read(&path).unwrap_err().kind(), std::io::ErrorKind::InvalidData);
        assert_eq!(
            read(folder.path().join("missing")).unwrap_err().kind(),
            std::io::ErrorKind::NotFound
        );
    }
}
