//! RFC 9651 §4.2's grammar, as a cursor over a field's text: every rule validated, nothing
//! built but the bare items a caller reads. What the drafts take from a field is `super`'s.

use std::borrow::Cow;

/// A bare item, as far as the drafts need its value.
pub(super) enum Bare<'a> {
    Integer(i64),
    String(Cow<'a, str>),
    Token(&'a str),
    /// A Decimal, Byte Sequence, Boolean, Date or Display String: valid, never a figure.
    Other,
}

/// A parameter or member whose value is not read: taken, whatever it is.
pub(super) fn ignore(_key: &str, _value: Bare<'_>) -> Option<()> {
    Some(())
}

/// The field text, consumed from the front as RFC 9651 §4.2 describes.
pub(super) struct Input<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Input<'a> {
    /// The field with its leading spaces discarded (§4.2 step 2); trailing ones are discarded
    /// as whitespace after the last member.
    pub(super) fn new(text: &'a str) -> Self {
        let mut input = Input { text, at: 0 };
        input.skip_spaces();
        input
    }

    pub(super) fn is_empty(&self) -> bool {
        self.at == self.text.len()
    }

    pub(super) fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    pub(super) fn advance(&mut self) {
        self.at += 1;
    }

    fn take_while(&mut self, wanted: impl Fn(u8) -> bool) -> &'a str {
        let start = self.at;
        while self.peek().is_some_and(&wanted) {
            self.advance();
        }
        &self.text[start..self.at]
    }

    fn skip_spaces(&mut self) {
        self.take_while(|byte| byte == b' ');
    }

    fn skip_whitespace(&mut self) {
        self.take_while(|byte| byte == b' ' || byte == b'\t');
    }

    /// After a list or dictionary member: the end of the field, or a comma and another member.
    pub(super) fn end_of_member(&mut self) -> Option<()> {
        self.skip_whitespace();
        if self.is_empty() {
            return Some(());
        }
        if self.peek() != Some(b',') {
            return None;
        }
        self.advance();
        self.skip_whitespace();
        // A trailing comma.
        (!self.is_empty()).then_some(())
    }

    /// §4.2.1.1, for a member whose value is not read.
    pub(super) fn item_or_inner_list(&mut self) -> Option<()> {
        if self.peek() == Some(b'(') {
            self.inner_list()
        } else {
            self.bare_item()?;
            self.parameters(ignore)
        }
    }

    /// §4.2.1.2, validated and skipped.
    fn inner_list(&mut self) -> Option<()> {
        self.advance();
        loop {
            self.skip_spaces();
            if self.peek()? == b')' {
                self.advance();
                return self.parameters(ignore);
            }
            self.bare_item()?;
            self.parameters(ignore)?;
            if !matches!(self.peek()?, b' ' | b')') {
                return None;
            }
        }
    }

    /// §4.2.3.2: each parameter is handed to `each`, which may refuse it.
    pub(super) fn parameters(
        &mut self,
        mut each: impl FnMut(&'a str, Bare<'a>) -> Option<()>,
    ) -> Option<()> {
        while self.peek() == Some(b';') {
            self.advance();
            self.skip_spaces();
            let key = self.key()?;
            let value = if self.peek() == Some(b'=') {
                self.advance();
                self.bare_item()?
            } else {
                Bare::Other
            };
            each(key, value)?;
        }
        Some(())
    }

    /// §4.2.3.3.
    pub(super) fn key(&mut self) -> Option<&'a str> {
        if !matches!(self.peek()?, b'a'..=b'z' | b'*') {
            return None;
        }
        Some(self.take_while(|byte| is(byte, KEY)))
    }

    /// §4.2.3.1.
    #[inline(always)]
    pub(super) fn bare_item(&mut self) -> Option<Bare<'a>> {
        match self.peek()? {
            b'-' | b'0'..=b'9' => self.number(),
            b'"' => self.string().map(Bare::String),
            b'*' | b'A'..=b'Z' | b'a'..=b'z' => Some(Bare::Token(self.token())),
            b':' => self.byte_sequence(),
            b'?' => self.boolean(),
            b'@' => self.date(),
            b'%' => self.display_string(),
            _ => None,
        }
    }

    /// §4.2.4: an Integer (at most 15 digits) or a Decimal (at most 12 digits before the point
    /// and 1 to 3 after).
    #[inline(always)]
    fn number(&mut self) -> Option<Bare<'a>> {
        let negative = self.peek() == Some(b'-');
        if negative {
            self.advance();
        }
        // Read in the same pass as scanned; a run longer than 15 digits is refused below, so
        // its value (wrapped) is never used.
        let start = self.at;
        let mut magnitude = 0i64;
        while let Some(digit) = self.peek().filter(u8::is_ascii_digit) {
            magnitude = magnitude
                .wrapping_mul(10)
                .wrapping_add(i64::from(digit - b'0'));
            self.advance();
        }
        let digits = self.at - start;
        if digits == 0 || digits > 15 {
            return None;
        }
        if self.peek() != Some(b'.') {
            return Some(Bare::Integer(if negative { -magnitude } else { magnitude }));
        }
        if digits > 12 {
            return None;
        }
        self.advance();
        let fraction = self.take_while(|byte| byte.is_ascii_digit());
        (1..=3).contains(&fraction.len()).then_some(Bare::Other)
    }

    /// §4.2.5: printable ASCII between quotes, `\"` and `\\` the only escapes.
    #[inline(always)]
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.advance();
        // Most strings have no escape: they are read in one scan and borrowed.
        let plain = self.take_while(|byte| is(byte, UNESCAPED));
        match self.peek()? {
            b'"' => {
                self.advance();
                Some(Cow::Borrowed(plain))
            }
            b'\\' => self.escaped(plain.to_owned()).map(Cow::Owned),
            _ => None,
        }
    }

    /// The rest of a String from its first escape on, appended to `unescaped`. Apart from the
    /// plain scan, so that the common case is inlined without the allocating loop.
    #[cold]
    fn escaped(&mut self, mut unescaped: String) -> Option<String> {
        loop {
            match self.peek()? {
                b'"' => {
                    self.advance();
                    return Some(unescaped);
                }
                b'\\' => {
                    let escaped = *self.text.as_bytes().get(self.at + 1)?;
                    if escaped != b'"' && escaped != b'\\' {
                        return None;
                    }
                    unescaped.push(char::from(escaped));
                    self.at += 2;
                }
                byte @ 0x20..=0x7e => {
                    unescaped.push(char::from(byte));
                    self.advance();
                }
                _ => return None,
            }
        }
    }

    /// §4.2.6.
    fn token(&mut self) -> &'a str {
        let start = self.at;
        self.advance();
        self.take_while(|byte| is(byte, TOKEN));
        &self.text[start..self.at]
    }

    /// §4.2.7: base64 between colons. Missing padding and non-zero pad bits are accepted, as
    /// the section asks; misplaced padding and a lone final character are not.
    fn byte_sequence(&mut self) -> Option<Bare<'a>> {
        self.advance();
        let content = self.take_while(|byte| byte != b':').as_bytes();
        self.peek()?;
        self.advance();
        let rem = content.len() % 4;
        let last_quad = content.len() - if rem == 0 { 4.min(content.len()) } else { rem };
        let (quads, tail) = content.split_at(last_quad);
        if !quads.iter().all(|&byte| is_base64(byte)) {
            return None;
        }
        let symbols = tail.iter().take_while(|&&byte| is_base64(byte)).count();
        let padding = &tail[symbols..];
        let valid_tail =
            padding.iter().all(|&byte| byte == b'=') && (tail.is_empty() || symbols >= 2);
        valid_tail.then_some(Bare::Other)
    }

    /// §4.2.8.
    fn boolean(&mut self) -> Option<Bare<'a>> {
        self.advance();
        if !matches!(self.peek()?, b'0' | b'1') {
            return None;
        }
        self.advance();
        Some(Bare::Other)
    }

    /// §4.2.9: `@` and an Integer.
    fn date(&mut self) -> Option<Bare<'a>> {
        self.advance();
        match self.number()? {
            Bare::Integer(_) => Some(Bare::Other),
            _ => None,
        }
    }

    /// §4.2.10: `%"…"`, printable ASCII with lowercase `%xx` escapes, decoding to UTF-8.
    fn display_string(&mut self) -> Option<Bare<'a>> {
        self.advance();
        if self.peek()? != b'"' {
            return None;
        }
        self.advance();
        let mut decoded = Vec::new();
        loop {
            match self.peek()? {
                b'"' => {
                    self.advance();
                    return std::str::from_utf8(&decoded).ok().map(|_| Bare::Other);
                }
                b'%' => {
                    let hex = self.text.as_bytes().get(self.at + 1..self.at + 3)?;
                    let high = lower_hex(hex[0])?;
                    let low = lower_hex(hex[1])?;
                    decoded.push(high << 4 | low);
                    self.at += 3;
                }
                byte @ 0x20..=0x7e => {
                    decoded.push(byte);
                    self.advance();
                }
                _ => return None,
            }
        }
    }
}

// The classes of byte the scans take runs of, one bit each, looked up in `CLASSES`: a load and
// a mask per byte where the ranges cost up to six comparisons, and the scans run over every
// byte of every field the layer reads.

/// A key's characters after its first (§4.2.3.3).
const KEY: u8 = 1;
/// A String's characters that need no escape: printable ASCII but `"` and `\` (§4.2.5).
const UNESCAPED: u8 = 2;
/// A Token's characters after its first: tchar, `:` and `/` (§4.2.6).
const TOKEN: u8 = 4;

/// Each byte's classes.
const CLASSES: [u8; 256] = {
    let mut classes = [0; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        if matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' | b'*') {
            classes[byte] |= KEY;
        }
        if matches!(b, 0x20..=0x7e) && b != b'"' && b != b'\\' {
            classes[byte] |= UNESCAPED;
        }
        if is_tchar(b) || b == b':' || b == b'/' {
            classes[byte] |= TOKEN;
        }
        byte += 1;
    }
    classes
};

/// Whether `byte` is of `class`.
fn is(byte: u8, class: u8) -> bool {
    CLASSES[usize::from(byte)] & class != 0
}

const fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric()
        || matches!(
            byte,
            b'!' | b'#'
                | b'$'
                | b'%'
                | b'&'
                | b'\''
                | b'*'
                | b'+'
                | b'-'
                | b'.'
                | b'^'
                | b'_'
                | b'`'
                | b'|'
                | b'~'
        )
}

fn is_base64(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'+' || byte == b'/'
}

fn lower_hex(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        _ => None,
    }
}
