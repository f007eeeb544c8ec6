//! The structured-field shapes of the IETF `RateLimit` drafts, read with `sfv` (RFC 9651).
//!
//! Lists and dictionaries are visited as they parse, keeping only the figures the drafts
//! define, so a realistic response parses without building `sfv`'s owned trees.
//!
//! A field is read whole or not at all: a syntax error (RFC 9651 §4.2 requires failing the
//! whole field) or a value the drafts forbid (a negative or fractional count, a zero window, an
//! inner list) makes the field absent. Half-reading a field the server got wrong risks
//! reporting a figure it never meant.

use std::borrow::Cow;
use std::fmt;

use sfv::visitor::{
    DictionaryVisitor, EntryVisitor, Ignored, InnerListVisitor, ItemVisitor, ListVisitor, Never,
    ParameterVisitor,
};
use sfv::{BareItemFromInput, KeyRef, Parser};

/// One member of a `RateLimit` or `RateLimit-Policy` list, or of a `RateLimit-Limit` list in
/// drafts 01 to 03.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Member<'de> {
    /// The policy name: a String (drafts 08 to 10) or a Token (lenient, as the draft 10
    /// appendix writes one).
    pub(crate) name: Option<Cow<'de, str>>,
    /// A bare Integer member: a limit or a quota (drafts 01 to 07).
    pub(crate) integer: Option<u64>,
    /// `r`: remaining quota units.
    pub(crate) remaining: Option<u64>,
    /// `t`: seconds until more quota.
    pub(crate) reset: Option<u64>,
    /// `q`: quota units per window.
    pub(crate) quota: Option<u64>,
    /// `w`: window length in seconds (never zero).
    pub(crate) window: Option<u64>,
}

/// The draft 07 `RateLimit` dictionary: `limit=100, remaining=50, reset=5`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Dictionary {
    pub(crate) limit: Option<u64>,
    pub(crate) remaining: Option<u64>,
    pub(crate) reset: Option<u64>,
}

impl Dictionary {
    fn has_figures(&self) -> bool {
        self.limit.is_some() || self.remaining.is_some() || self.reset.is_some()
    }
}

/// The members of a list field; `None` if the field is not one the drafts allow.
pub(crate) fn parse_list(field: &str) -> Option<Vec<Member<'_>>> {
    Parser::new(field)
        .parse_list_with_visitor(Members::default())
        .ok()
}

/// The draft 07 dictionary, if the field is one and names at least one of its keys.
///
/// A draft 08 list never parses as a dictionary (its members start with a String), and a
/// draft 07 dictionary never as a list, except for a lone Token member with parameters
/// (`quota;t=1`): it names no draft 07 key, so it falls to the list reading.
pub(crate) fn parse_dictionary(field: &str) -> Option<Dictionary> {
    Parser::new(field)
        .parse_dictionary_with_visitor(Dictionary::default())
        .ok()
        .filter(Dictionary::has_figures)
}

/// Why a field is unusable; the parser only needs to know that it is.
#[derive(Debug)]
pub(crate) struct Unusable;

impl fmt::Display for Unusable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a value the RateLimit drafts allow")
    }
}

impl std::error::Error for Unusable {}

/// A count: a non-negative Integer.
fn count(item: &BareItemFromInput<'_>) -> Result<u64, Unusable> {
    item.as_integer()
        .and_then(|integer| u64::try_from(integer).ok())
        .ok_or(Unusable)
}

#[derive(Default)]
struct Members<'de>(Vec<Member<'de>>);

impl<'de> ListVisitor<'de> for Members<'de> {
    type Out = Vec<Member<'de>>;
    type Error = Unusable;

    fn entry(&mut self) -> Result<impl EntryVisitor<'de>, Unusable> {
        Ok(MemberEntry(&mut self.0))
    }

    fn finish(self) -> Result<Self::Out, Unusable> {
        Ok(self.0)
    }
}

struct MemberEntry<'a, 'de>(&'a mut Vec<Member<'de>>);

impl<'de> EntryVisitor<'de> for MemberEntry<'_, 'de> {
    type Error = Unusable;

    fn item(self) -> Result<impl ItemVisitor<'de>, Unusable> {
        Ok(self)
    }

    fn inner_list(self) -> Result<impl InnerListVisitor<'de>, Unusable> {
        Err::<Never, _>(Unusable)
    }
}

impl<'a, 'de> ItemVisitor<'de> for MemberEntry<'a, 'de> {
    type Out = ();
    type Error = Unusable;

    fn bare_item(
        self,
        item: BareItemFromInput<'de>,
    ) -> Result<impl ParameterVisitor<'de, Out = ()>, Unusable> {
        let mut member = Member::default();
        match item {
            BareItemFromInput::String(Cow::Borrowed(name)) => {
                member.name = Some(Cow::Borrowed(name.as_str()));
            }
            BareItemFromInput::String(Cow::Owned(name)) => {
                member.name = Some(Cow::Owned(name.as_str().to_owned()));
            }
            BareItemFromInput::Token(name) => member.name = Some(Cow::Borrowed(name.as_str())),
            integer => member.integer = Some(count(&integer)?),
        }
        Ok(MemberParameters {
            member,
            into: self.0,
        })
    }
}

struct MemberParameters<'a, 'de> {
    member: Member<'de>,
    into: &'a mut Vec<Member<'de>>,
}

impl<'de> ParameterVisitor<'de> for MemberParameters<'_, 'de> {
    type Out = ();
    type Error = Unusable;

    fn parameter(
        &mut self,
        key: &'de KeyRef,
        value: BareItemFromInput<'de>,
    ) -> Result<(), Unusable> {
        // Unknown parameters (`pk`, `qu`, `burst`, `comment`) are extensions: skipped.
        let figure = match key.as_str() {
            "r" => &mut self.member.remaining,
            "t" => &mut self.member.reset,
            "q" => &mut self.member.quota,
            "w" => &mut self.member.window,
            _ => return Ok(()),
        };
        let value = count(&value)?;
        if key.as_str() == "w" && value == 0 {
            return Err(Unusable);
        }
        // A repeated parameter overwrites the earlier one (RFC 9651 §4.2.3.2).
        *figure = Some(value);
        Ok(())
    }

    fn finish(self) -> Result<(), Unusable> {
        self.into.push(self.member);
        Ok(())
    }
}

impl<'de> DictionaryVisitor<'de> for Dictionary {
    type Out = Dictionary;
    type Error = Unusable;

    fn entry(&mut self, key: &'de KeyRef) -> Result<impl EntryVisitor<'de>, Unusable> {
        let figure = match key.as_str() {
            "limit" => Some(&mut self.limit),
            "remaining" => Some(&mut self.remaining),
            "reset" => Some(&mut self.reset),
            _ => None,
        };
        Ok(figure.map(DictionaryFigure))
    }

    fn finish(self) -> Result<Dictionary, Unusable> {
        Ok(self)
    }
}

struct DictionaryFigure<'a>(&'a mut Option<u64>);

impl<'de> EntryVisitor<'de> for DictionaryFigure<'_> {
    type Error = Unusable;

    fn item(self) -> Result<impl ItemVisitor<'de>, Unusable> {
        Ok(|item: BareItemFromInput<'de>| {
            *self.0 = Some(count(&item)?);
            Ok::<_, Unusable>(Ignored)
        })
    }

    fn inner_list(self) -> Result<impl InnerListVisitor<'de>, Unusable> {
        Err::<Never, _>(Unusable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(name: &str) -> Member<'_> {
        Member {
            name: Some(Cow::Borrowed(name)),
            ..Member::default()
        }
    }

    #[test]
    fn a_named_list_keeps_r_t_q_w_and_skips_extensions() {
        let got = parse_list(
            r#""default";r=50;t=30;pk=:dHJpYWwxMjEzMjM=:, "day";q=5000;qu="requests";w=86400"#,
        )
        .unwrap();
        assert_eq!(
            got,
            [
                Member {
                    remaining: Some(50),
                    reset: Some(30),
                    ..named("default")
                },
                Member {
                    quota: Some(5000),
                    window: Some(86400),
                    ..named("day")
                },
            ]
        );
    }

    #[test]
    fn escaped_strings_and_tokens_are_names() {
        let got = parse_list(r#""a\"b";r=1, quota;t=1"#).unwrap();
        assert_eq!(got[0].name.as_deref(), Some("a\"b"));
        assert_eq!(got[1].name.as_deref(), Some("quota"));
        assert_eq!(got[1].reset, Some(1));
        assert_eq!(got[1].remaining, None);
    }

    #[test]
    fn bare_integers_are_limits_with_their_windows() {
        let got = parse_list("10, 50;w=60;burst=1000;comment=\"sliding\"").unwrap();
        assert_eq!(got[0].integer, Some(10));
        assert_eq!(got[0].window, None);
        assert_eq!(got[1].integer, Some(50));
        assert_eq!(got[1].window, Some(60));
    }

    #[test]
    fn forbidden_values_make_the_field_unusable() {
        for field in [
            r#""default";r=-1;t=30"#,
            r#""default";r=50;t=30.5"#,
            r#""p";q=100;w=0"#,
            r#""default";r=?1"#,
            r#"("a" "b");r=1"#,
            "-5",
            "1.5",
            "?0",
            ":AAAA:",
        ] {
            assert_eq!(parse_list(field), None, "{field}");
        }
    }

    #[test]
    fn syntax_errors_make_the_field_unusable() {
        for field in [
            r#""default";R=50;T=30"#,
            r#""default";r=50;t=30,"#,
            r#""default" ;r=50;t=30"#,
            "\"d\u{e9}fault\";r=1;t=1",
            r#""default";r=50;t=1234567890123456"#,
        ] {
            assert_eq!(parse_list(field), None, "{field}");
        }
    }

    #[test]
    fn a_repeated_parameter_takes_the_last_value() {
        let got = parse_list(r#""default";r=5;r=7;t=10"#).unwrap();
        assert_eq!(got[0].remaining, Some(7));
    }

    #[test]
    fn the_draft_07_dictionary_is_read_only_when_it_names_a_key() {
        assert_eq!(
            parse_dictionary("limit=100, remaining=50, reset=5, extra=?1"),
            Some(Dictionary {
                limit: Some(100),
                remaining: Some(50),
                reset: Some(5)
            })
        );
        assert_eq!(parse_dictionary("quota;t=1"), None);
        assert_eq!(parse_dictionary(r#""default";r=50;t=30"#), None);
        assert_eq!(parse_dictionary("limit=-1"), None);
        assert_eq!(parse_dictionary("limit=1.0"), None);
        assert_eq!(parse_dictionary("limit=(1 2)"), None);
    }

    #[test]
    fn an_empty_field_is_an_empty_list() {
        assert_eq!(parse_list(""), Some(vec![]));
    }
}
