//! Bytes in pieces: a file read whole into a buffer of the size it had when opened, a piece at
//! a time, so that the caller can run its own work between pieces (the binding: Ctrl-C and a
//! progress bar); pieces copied one after the other into one buffer, `Cancel` polled between.

use std::io::{self, ErrorKind};

use crate::cancel::Cancel;
use crate::error::Error;

/// How many bytes `pieces` hold together; None when that is more than a `usize` holds.
pub fn total_len(pieces: &[&[u8]]) -> Option<usize> {
    pieces
        .iter()
        .try_fold(0usize, |total, p| total.checked_add(p.len()))
}

/// Copies `pieces` one after the other into `out`, which must be exactly as long as they are
/// together ([`total_len`]; else an error, nothing copied). `cancel` is polled before each
/// piece (`Problem::Interrupted`).
pub fn concat_into(out: &mut [u8], pieces: &[&[u8]], cancel: &Cancel<'_>) -> Result<(), Error> {
    if total_len(pieces) != Some(out.len()) {
        return Err(Error::invalid(
            "pieces",
            "the pieces do not fill the buffer",
        ));
    }
    let mut at = 0;
    for piece in pieces {
        cancel.check()?;
        out[at..at + piece.len()].copy_from_slice(piece);
        at += piece.len();
    }
    Ok(())
}

/// Fills `buffer` from `file`, `piece` bytes (at least 1) at a time, each read run by `read`
/// (the binding runs it with the GIL released), then checks that the file ends there.
/// `between(Some(bytes_read))` runs after each piece's read, `between(None)` after a read of the
/// end that a signal interrupted; its error stops the reading. `Ok(false)` when the file turned
/// out shorter or longer than `buffer` (it changed meanwhile). A read that a signal interrupted
/// (`ErrorKind::Interrupted`) is tried again; any other error is the reading's, by `error`.
pub fn fill<F, E>(
    file: &mut F,
    buffer: &mut [u8],
    piece: usize,
    mut read: impl FnMut(&mut F, &mut [u8]) -> io::Result<usize>,
    mut between: impl FnMut(Option<usize>) -> Result<(), E>,
    error: impl Fn(io::Error) -> E,
) -> Result<bool, E> {
    let piece = piece.max(1);
    let mut done = 0;
    while done < buffer.len() {
        let end = buffer.len().min(done + piece);
        match read(file, &mut buffer[done..end]) {
            Ok(0) => return Ok(false), // shorter than its size: it changed
            Ok(n) => done += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(error(e)),
        }
        between(Some(done))?;
    }
    let mut more = [0u8; 1];
    loop {
        match read(file, &mut more) {
            Ok(0) => return Ok(true),
            Ok(_) => return Ok(false), // longer than its size: it changed
            Err(e) if e.kind() == ErrorKind::Interrupted => between(None)?,
            Err(e) => return Err(error(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// A file of `data` that reads at most `most` bytes a call, and fails as `fails` says the
    /// first times.
    struct File {
        data: Vec<u8>,
        at: usize,
        most: usize,
        fails: Vec<ErrorKind>,
    }

    impl Read for File {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if let Some(kind) = self.fails.pop() {
                return Err(kind.into());
            }
            let n = out.len().min(self.most).min(self.data.len() - self.at);
            out[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    fn file(data: &[u8], most: usize, fails: &[ErrorKind]) -> File {
        let fails = fails.iter().rev().copied().collect();
        File {
            data: data.to_vec(),
            at: 0,
            most,
            fails,
        }
    }

    /// (whole, buffer, the `between` calls) of a reading of `f` into `size` bytes.
    fn fill_of(mut f: File, size: usize, piece: usize) -> (Result<bool, String>, Vec<u8>, String) {
        let mut buffer = vec![0; size];
        let mut calls = String::new();
        let between = |done: Option<usize>| {
            calls += &format!("{done:?} ");
            Ok(())
        };
        let read = |f: &mut File, b: &mut [u8]| f.read(b);
        let whole = fill(&mut f, &mut buffer, piece, read, between, |e| e.to_string());
        (whole, buffer, calls)
    }

    #[test]
    fn a_file_of_its_size_is_read_whole_piece_by_piece() {
        let (whole, buffer, calls) = fill_of(file(b"abcdefg", 100, &[]), 7, 3);
        assert_eq!((whole, &buffer[..]), (Ok(true), &b"abcdefg"[..]));
        assert_eq!(calls, "Some(3) Some(6) Some(7) ");
        // Short reads, and a piece of 0 read as 1.
        let (whole, buffer, calls) = fill_of(file(b"abc", 2, &[]), 3, 0);
        assert_eq!(
            (whole, &buffer[..], &calls[..]),
            (Ok(true), &b"abc"[..], "Some(1) Some(2) Some(3) ")
        );
        let (whole, _, calls) = fill_of(file(b"", 2, &[]), 0, 4);
        assert_eq!((whole, &calls[..]), (Ok(true), ""));
    }

    #[test]
    fn pieces_are_copied_one_after_the_other() {
        assert_eq!(total_len(&[b"ab", b"", b"cde"]), Some(5));
        assert_eq!(total_len(&[]), Some(0));
        let mut out = [0u8; 5];
        let none = Cancel::none();
        assert_eq!(concat_into(&mut out, &[b"ab", b"", b"cde"], &none), Ok(()));
        assert_eq!(&out, b"abcde");
        assert!(concat_into(&mut out, &[b"ab"], &none).is_err());
        assert!(concat_into(&mut [0; 0], &[], &none).is_ok());
        none.stop();
        let e = concat_into(&mut out, &[b"abcde"], &none).unwrap_err();
        assert_eq!(e.problem, crate::error::Problem::Interrupted);
    }

    #[test]
    fn a_file_that_changed_is_not_whole() {
        assert_eq!(fill_of(file(b"abc", 100, &[]), 4, 2).0, Ok(false));
        assert_eq!(fill_of(file(b"abcde", 100, &[]), 4, 2).0, Ok(false));
    }

    #[test]
    fn interrupted_reads_are_tried_again_and_other_errors_stop() {
        let interrupted = [ErrorKind::Interrupted, ErrorKind::Interrupted];
        let (whole, buffer, calls) = fill_of(file(b"ab", 100, &interrupted), 2, 8);
        assert_eq!((whole, &buffer[..]), (Ok(true), &b"ab"[..]));
        assert_eq!(calls, "Some(0) Some(0) Some(2) ");
        // At the end: `between(None)`.
        let mut f = file(b"ab", 100, &[]);
        let mut buffer = [0; 2];
        let mut calls = Vec::new();
        let mut reads = 0;
        let read = |f: &mut File, b: &mut [u8]| {
            reads += 1;
            if reads == 2 {
                return Err(ErrorKind::Interrupted.into());
            }
            f.read(b)
        };
        let between = |done| {
            calls.push(done);
            Ok::<_, String>(())
        };
        let whole = fill(&mut f, &mut buffer, 8, read, between, |e| e.to_string());
        assert_eq!((whole, calls), (Ok(true), vec![Some(2), None]));
        let (whole, _, calls) = fill_of(file(b"ab", 100, &[ErrorKind::NotFound]), 2, 8);
        assert!(whole.is_err() && calls.is_empty());
        // An error of `between` stops the reading.
        let mut f = file(b"abcd", 100, &[]);
        let stop = |_| Err("stop".to_owned());
        let whole = fill(
            &mut f,
            &mut [0; 4],
            1,
            |f, b| f.read(b),
            stop,
            |e| e.to_string(),
        );
        assert_eq!((whole, f.at), (Err("stop".into()), 1));
    }
}
