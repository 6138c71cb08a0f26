//! Messages without allocation.

/// The loader's longest file name, with its NUL (`PATH_MAX` on Linux).
pub(super) const PATH_BUFFER: usize = 4096;

/// A fixed buffer for a message (the crate is `no_std`, without allocation):
/// room for a path of `PATH_BUFFER` bytes written lossily (an invalid byte
/// becomes the three of U+FFFD) and the system's text around it.
pub(super) struct Text {
    pub(super) bytes: [u8; TEXT_BUFFER],
    pub(super) len: usize,
}

pub(super) const TEXT_BUFFER: usize = 3 * PATH_BUFFER + 512;

impl Text {
    pub(super) const fn new() -> Text {
        Text {
            bytes: [0; TEXT_BUFFER],
            len: 0,
        }
    }
    pub(super) fn push(&mut self, s: &[u8]) {
        for &b in s {
            if self.len < self.bytes.len() {
                self.bytes[self.len] = b;
                self.len += 1;
            }
        }
    }
    /// `s`, each byte that is not part of valid UTF-8 written as U+FFFD (as
    /// `String::from_utf8_lossy` does): a path or a system message that is
    /// not UTF-8 is kept whole.
    pub(super) fn push_lossy(&mut self, mut s: &[u8]) {
        loop {
            match core::str::from_utf8(s) {
                Ok(v) => return self.push(v.as_bytes()),
                Err(e) => {
                    let (valid, rest) = s.split_at(e.valid_up_to());
                    self.push(valid);
                    self.push("\u{FFFD}".as_bytes());
                    match e.error_len() {
                        Some(n) => s = &rest[n..],
                        None => return,
                    }
                }
            }
        }
    }
    pub(super) fn push_number(&mut self, n: u64) {
        let mut digits = [0u8; 20];
        self.push(decimal(n, &mut digits));
    }
    /// `13.0` for `13000`.
    pub(super) fn push_release(&mut self, version: u32) {
        self.push_number(u64::from(version / 1000));
        self.push(b".");
        self.push_number(u64::from(version % 1000 / 10));
    }
    pub(super) fn as_str(&self) -> &str {
        // Valid UTF-8 (everything is pushed lossily or is ASCII), unless
        // the buffer cut a sequence: then the valid prefix.
        let bytes = &self.bytes[..self.len];
        match core::str::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => core::str::from_utf8(&bytes[..e.valid_up_to()]).unwrap_or(""),
        }
    }
}

/// How many bytes `wide` (UTF-16, unpaired surrogates included) takes as
/// generalized UTF-8, as Windows' variables are read (`windows.rs`): the
/// length a too-long value is reported with, in the bytes the limit
/// counts, not in UTF-16 units.
#[cfg(any(windows, test))]
pub(super) fn utf8_len_of_utf16(wide: &[u16]) -> usize {
    let mut len = 0;
    let mut i = 0;
    while i < wide.len() {
        let w = wide[i];
        len += match (w, wide.get(i + 1)) {
            (0xD800..=0xDBFF, Some(0xDC00..=0xDFFF)) => {
                i += 1;
                4
            }
            (0..=0x7F, _) => 1,
            (0x80..=0x7FF, _) => 2,
            _ => 3,
        };
        i += 1;
    }
    len
}

/// `n` in decimal, written at the end of `digits` (room for any `u64`);
/// the digits written.
pub(super) fn decimal(mut n: u64, digits: &mut [u8; 20]) -> &[u8] {
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &digits[i..]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The longest path the loader takes (`PATH_BUFFER - 1` bytes), none of
    /// them UTF-8 (each written as the three bytes of U+FFFD), fits whole
    /// with the text around it: the buffer's size is what the message
    /// needs (cargo-mutants found a smaller buffer unseen: the size
    /// `3 * PATH_BUFFER + 512` made `3 + PATH_BUFFER + 512` or
    /// `3 * PATH_BUFFER - 512` cut the reason off).
    #[test]
    fn the_longest_path_not_utf8_fits_whole_with_its_reason() {
        let reason = b": cannot open shared object file: No such file or directory";
        let mut t = Text::new();
        t.push(b"CUDA_MEM_SYS_LIBCUDA names no loadable library: ");
        t.push_lossy(&[0xFF; PATH_BUFFER - 1]);
        t.push(reason);
        assert!(
            t.as_str().as_bytes().ends_with(reason),
            "the reason was cut"
        );
        assert_eq!(t.as_str().matches('\u{FFFD}').count(), PATH_BUFFER - 1);
    }

    /// A message longer than the buffer is cut at its end, never written
    /// past it (a `<` turned `<=` in `push` indexed one byte beyond).
    #[test]
    fn a_message_longer_than_the_buffer_is_cut_at_its_end() {
        let mut t = Text::new();
        t.push(&[b'x'; TEXT_BUFFER + 10]);
        assert_eq!(t.len, TEXT_BUFFER);
        t.push(b"more");
        assert_eq!(t.len, TEXT_BUFFER);
        assert_eq!(t.as_str().len(), TEXT_BUFFER);
    }

    #[test]
    fn a_utf16_value_is_measured_in_utf8_bytes() {
        // "é" is one UTF-16 unit and two bytes; "€" one unit, three
        // bytes; U+1F600 two units, four bytes; an unpaired surrogate one
        // unit, three bytes (generalized UTF-8). The wrong twin, the count
        // of units, is 1 + 1 + 1 + 2 + 1 = 6.
        let mut wide = [0u16; 6];
        for (w, u) in wide.iter_mut().zip("aé€😀".encode_utf16().chain([0xD800])) {
            *w = u;
        }
        assert_eq!(wide[5], 0xD800);
        assert_eq!(utf8_len_of_utf16(&wide), 1 + 2 + 3 + 4 + 3);
        assert_eq!(utf8_len_of_utf16(&[]), 0);
        // A high surrogate at the end, and a low one alone.
        assert_eq!(utf8_len_of_utf16(&[0x61, 0xDBFF]), 4);
        assert_eq!(utf8_len_of_utf16(&[0xDC00, 0x61]), 4);
    }
}
