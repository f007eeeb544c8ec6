//! The structured-field shapes of the IETF `RateLimit` drafts: an RFC 9651 §4.2 parser for
//! Lists and Dictionaries that keeps only the figures the drafts define.
//!
//! It is written here rather than taken from `sfv` because it runs on every response the layer
//! sees: it validates the whole field as RFC 9651 requires but builds no tree, and allocates
//! only for a name with an escape, a Display String, or a field of more than two members (a
//! draft 08 pair parses in a fraction of `sfv`'s time; `BENCHMARKS.md` has the figures). Its
//! answers are checked against `sfv` by a differential property test and a fuzz target
//! (`structured_reference`). The grammar is `input`'s; what the drafts take from it is here.
//!
//! A field is read whole or not at all: a syntax error (RFC 9651 §4.2 requires failing the
//! whole field) or a value the drafts forbid (a negative or fractional count, a zero window, an
//! inner list) makes the field absent. Half-reading a field the server got wrong risks
//! reporting a figure it never meant.

mod input;

use std::borrow::Cow;

use smallvec::SmallVec;

use input::{Bare, Input, ignore};

use super::Unit;

/// One member of a `RateLimit` or `RateLimit-Policy` list, or of a `RateLimit-Limit` list in
/// drafts 01 to 03.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Member<'a> {
    /// The policy name: a String (drafts 08 to 10) or a Token (lenient, as the draft 10
    /// appendix writes one).
    pub(crate) name: Option<Cow<'a, str>>,
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
    /// `qu`: the unit the quota counts (drafts 09 and 10); requests where none is named.
    pub(crate) unit: Unit,
}

impl Member<'_> {
    /// The member with its name copied out of the field text.
    pub(crate) fn into_owned<'b>(self) -> Member<'b> {
        Member {
            name: self.name.map(|name| Cow::Owned(name.into_owned())),
            ..self
        }
    }
}

/// The members of one field. A response names one or two policies, and the layer reads every
/// response: held inline, they cost no allocation.
pub(crate) type Members<'a> = SmallVec<[Member<'a>; 2]>;

/// The draft 07 `RateLimit` dictionary: `limit=100, remaining=50, reset=5`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Dictionary {
    pub(crate) limit: Option<u64>,
    pub(crate) remaining: Option<u64>,
    pub(crate) reset: Option<u64>,
}

/// How a repeated figure is kept: the more restrictive of two values.
type Keep = fn(u64, u64) -> u64;

impl Dictionary {
    pub(crate) fn has_figures(&self) -> bool {
        self.limit.is_some() || self.remaining.is_some() || self.reset.is_some()
    }

    /// The figure a key names, with how a repeated key is kept. A key repeated (a field split
    /// over lines) keeps its most restrictive value, as duplicate headers do: the lowest limit
    /// and remaining, the latest reset.
    pub(crate) fn figure(&mut self, key: &str) -> Option<(&mut Option<u64>, Keep)> {
        match key {
            "limit" => Some((&mut self.limit, u64::min)),
            "remaining" => Some((&mut self.remaining, u64::min)),
            "reset" => Some((&mut self.reset, u64::max)),
            _ => None,
        }
    }
}

/// The members of a list field; `None` if the field is not one the drafts allow.
pub(crate) fn parse_list(field: &str) -> Option<Members<'_>> {
    let mut input = Input::new(field);
    let mut members = Members::new();
    while !input.is_empty() {
        members.push(list_member(&mut input)?);
        input.end_of_member()?;
    }
    Some(members)
}

/// The draft 07 dictionary, if the field is one and names at least one of its keys.
///
/// A draft 08 list never parses as a dictionary (its members start with a String), and a
/// draft 07 dictionary never as a list, except for a lone Token member with parameters
/// (`quota;t=1`): it names no draft 07 key, so it falls to the list reading.
pub(crate) fn parse_dictionary(field: &str) -> Option<Dictionary> {
    let mut input = Input::new(field);
    let mut dictionary = Dictionary::default();
    while !input.is_empty() {
        let figure = dictionary.figure(input.key()?);
        match (input.peek(), figure) {
            (Some(b'='), Some((figure, keep))) => {
                input.advance();
                let value = count(&input.bare_item()?)?;
                *figure = Some(figure.map_or(value, |known| keep(known, value)));
                input.parameters(ignore)?;
            }
            (Some(b'='), None) => {
                input.advance();
                input.item_or_inner_list()?;
            }
            // A key without a value is the Boolean true, never a count.
            (_, Some(_)) => return None,
            (_, None) => input.parameters(ignore)?,
        }
        input.end_of_member()?;
    }
    Some(dictionary).filter(Dictionary::has_figures)
}

/// A count: a non-negative Integer.
fn count(item: &Bare<'_>) -> Option<u64> {
    match item {
        Bare::Integer(integer) => u64::try_from(*integer).ok(),
        _ => None,
    }
}

/// A list member the drafts allow: a named or integer item with its figures.
fn list_member<'a>(input: &mut Input<'a>) -> Option<Member<'a>> {
    let mut member = Member::default();
    match input.bare_item()? {
        Bare::String(name) => member.name = Some(name),
        Bare::Token(name) => member.name = Some(Cow::Borrowed(name)),
        integer @ Bare::Integer(_) => member.integer = Some(count(&integer)?),
        Bare::Other => return None,
    }
    input.parameters(|key, value| {
        let figure = match key {
            "r" => &mut member.remaining,
            "t" => &mut member.reset,
            "q" => &mut member.quota,
            "w" => &mut member.window,
            "qu" => {
                member.unit = quota_unit(&value);
                return Some(());
            }
            // Extensions (`pk`, `burst`, `comment`) are skipped.
            _ => return Some(()),
        };
        let value = count(&value)?;
        if key == "w" && value == 0 {
            return None;
        }
        // A repeated parameter overwrites the earlier one (§4.2.3.2).
        *figure = Some(value);
        Some(())
    })?;
    Some(member)
}

/// The unit a policy's quota counts (`qu`): requests, or another (`content-bytes`,
/// `concurrent-requests`, one the drafts do not name) that a call does not spend one of.
fn quota_unit(value: &Bare<'_>) -> Unit {
    match value {
        Bare::String(unit) if unit == "requests" => Unit::Requests,
        Bare::Token("requests") => Unit::Requests,
        _ => Unit::Other,
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
            got[..],
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

    /// `qu` names the unit the quota counts (drafts 09 and 10): requests, named or not; any
    /// other (bytes, requests in flight, a unit the drafts do not name) is another unit.
    #[test]
    fn qu_names_the_unit_of_the_quota() {
        let unit = |field: &str| parse_list(field).unwrap()[0].unit;
        assert_eq!(unit(r#""a";q=5"#), Unit::Requests);
        assert_eq!(unit(r#""a";q=5;qu="requests""#), Unit::Requests);
        assert_eq!(unit(r#""a";q=5;qu=requests"#), Unit::Requests);
        for other in [
            r#""content-bytes""#,
            r#""concurrent-requests""#,
            "bytes",
            "5",
        ] {
            assert_eq!(
                unit(&format!(r#""a";q=5;qu={other}"#)),
                Unit::Other,
                "{other}"
            );
        }
    }

    #[test]
    fn escaped_strings_and_tokens_are_names() {
        let got = parse_list(r#""a\"b\\c";r=1, quota;t=1"#).unwrap();
        assert_eq!(got[0].name.as_deref(), Some("a\"b\\c"));
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
            r#""default";r"#,
            r#"("a" "b");r=1"#,
            "-5",
            "1.5",
            "?0",
            ":AAAA:",
            "@1700000000",
            r#"%"x""#,
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
            r#""unterminated;r=1"#,
            r#""bad\escape";r=1"#,
            r#""default";r=50 "x""#,
            r#""a";pk=:YQ=a:"#,
            r#""a";pk=:Y:"#,
            r#""a";pk=:YWJj"#,
            r#""a";x=1.2345"#,
            r#""a";x=1234567890123.5"#,
            r#""a";x=1."#,
            r#""a";x=-"#,
            r#""a";x=?2"#,
            r#""a";x=@1.5"#,
            r#""a";x=%"%FF""#,
            r#""a";x=%"%c3""#,
            r#""a";x=%x"#,
            r#""a";x=&"#,
            ",",
            r#""a",,"b""#,
        ] {
            assert_eq!(parse_list(field), None, "{field}");
        }
    }

    #[test]
    fn every_bare_item_type_is_accepted_as_an_extension() {
        let field = concat!(
            r#""a";i=-12;d=-1.5;s="x\"y";tk=tok:/en;b=:YWJj:;p=:YQ:;q2=:YQ==:;"#,
            r#"f=?0;u;at=@-1;ds=%"f%c3%bc%c3%bcr";*k=1"#,
        );
        let got = parse_list(field).unwrap();
        assert_eq!(got[0].name.as_deref(), Some("a"));
    }

    #[test]
    fn whitespace_is_where_rfc_9651_allows_it() {
        assert_eq!(parse_list("  \"a\";r=1 ,\t\"b\";  r=2  ").unwrap().len(), 2);
        assert_eq!(parse_list(""), Some(Members::new()));
        assert_eq!(parse_list("   "), Some(Members::new()));
        assert_eq!(parse_list("\t\"a\""), None, "only spaces lead a field");
    }

    #[test]
    fn a_repeated_parameter_takes_the_last_value() {
        let got = parse_list(r#""default";r=5;r=7;t=10"#).unwrap();
        assert_eq!(got[0].remaining, Some(7));
    }

    #[test]
    fn the_draft_07_dictionary_is_read_only_when_it_names_a_key() {
        assert_eq!(
            parse_dictionary("limit=100, remaining=50, reset=5, extra=?1, more=(1 2);x, flag"),
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
        assert_eq!(parse_dictionary("limit"), None);
        assert_eq!(parse_dictionary("limit=5, reset=1,"), None);
        assert_eq!(parse_dictionary("limit=5, other=(1 2"), None);
        assert_eq!(
            parse_dictionary("limit=10, remaining=0, reset=30, limit=100, remaining=50, reset=5"),
            Some(Dictionary {
                limit: Some(10),
                remaining: Some(0),
                reset: Some(30)
            }),
            "a repeated key keeps its most restrictive value"
        );
    }

    mod against_sfv {
        use super::*;
        use crate::headers::structured_reference as reference;
        use proptest::prelude::*;

        /// Bare items of every type, mostly valid, some broken the ways servers break them.
        fn bare_item() -> BoxedStrategy<String> {
            prop_oneof![
                12 => (0i64..1000).prop_map(|n| n.to_string()),
                6 => "\"[a-z0-9-]{1,8}\"",
                1 => prop::sample::select(&["\"requests\"", "requests", "\"content-bytes\""][..])
                    .prop_map(str::to_owned),
                1 => (-20i64..20).prop_map(|n| n.to_string()),
                1 => "-?[0-9]{1,17}",
                1 => "-?[0-9]{1,14}\\.[0-9]{0,4}",
                1 => "\"([ !#-\\[\\]-~]|\\\\\"|\\\\\\\\|\\\\n|\u{e9}){0,6}\"?",
                1 => "[A-Za-z*][A-Za-z0-9!#$%&'*+.^_`|~:/-]{0,6}",
                1 => ":[A-Za-z0-9+/]{0,7}={0,3}:?",
                1 => "\\?[0-2]",
                1 => "@-?[0-9]{1,3}(\\.[0-9])?",
                1 => "%\"([ -!#-$&-~]|%[0-9a-fA-F]{2}|%c3%bc){0,4}\"",
            ]
            .boxed()
        }

        fn key() -> impl Strategy<Value = String> {
            prop_oneof![
                8 => prop::sample::select(&["r", "t", "q", "w", "qu", "pk", "limit", "remaining", "reset", "x"][..])
                    .prop_map(str::to_owned),
                1 => "[a-z*][a-z0-9_.*-]{0,4}",
                1 => "[A-Z_0-9][a-z]{0,2}",
            ]
        }

        fn parameters() -> impl Strategy<Value = String> {
            prop::collection::vec(
                (
                    prop::sample::select(&[";", "; ", " ;"][..]),
                    key(),
                    prop::option::of(bare_item()),
                ),
                0..4,
            )
            .prop_map(|parameters| {
                parameters
                    .into_iter()
                    .map(|(semicolon, key, value)| match value {
                        Some(value) => format!("{semicolon}{key}={value}"),
                        None => format!("{semicolon}{key}"),
                    })
                    .collect()
            })
        }

        fn member() -> impl Strategy<Value = String> {
            let inner_list = (
                prop::collection::vec(bare_item(), 0..3),
                prop::sample::select(&[" ", "  ", ""][..]),
            )
                .prop_map(|(items, gap)| format!("({})", items.join(gap)));
            (prop_oneof![8 => bare_item(), 1 => inner_list], parameters())
                .prop_map(|(value, parameters)| value + &parameters)
        }

        const SEPARATORS: &[&str] = &[", ", ",", " , ", ",\t", ",,", " ", ", ,"];

        fn joined(members: Vec<String>, separators: Vec<&str>, trailing: &str) -> String {
            let mut field = String::new();
            for (index, member) in members.iter().enumerate() {
                if index > 0 {
                    field.push_str(separators[index % separators.len()]);
                }
                field.push_str(member);
            }
            field + trailing
        }

        fn list() -> impl Strategy<Value = String> {
            (
                prop::collection::vec(member(), 0..4),
                prop::collection::vec(prop::sample::select(SEPARATORS), 1..4),
                prop::sample::select(&["", " ", ",", "\t"][..]),
            )
                .prop_map(|(members, separators, trailing)| joined(members, separators, trailing))
        }

        fn dictionary() -> impl Strategy<Value = String> {
            let entry = (key(), prop::option::of(member()), parameters()).prop_map(
                |(key, value, parameters)| match value {
                    Some(value) => format!("{key}={value}"),
                    None => key + &parameters,
                },
            );
            (
                prop::collection::vec(entry, 0..4),
                prop::collection::vec(prop::sample::select(SEPARATORS), 1..4),
                prop::sample::select(&["", " ", ","][..]),
            )
                .prop_map(|(entries, separators, trailing)| joined(entries, separators, trailing))
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(10_000))]

            #[test]
            fn lists_read_as_sfv_reads_them(field in list()) {
                prop_assert_eq!(parse_list(&field), reference::parse_list(&field));
                prop_assert_eq!(parse_dictionary(&field), reference::parse_dictionary(&field));
            }

            #[test]
            fn dictionaries_read_as_sfv_reads_them(field in dictionary()) {
                prop_assert_eq!(parse_dictionary(&field), reference::parse_dictionary(&field));
                prop_assert_eq!(parse_list(&field), reference::parse_list(&field));
            }

            #[test]
            fn arbitrary_text_reads_as_sfv_reads_it(field in "[ -~\\t\u{e9}]{0,40}") {
                prop_assert_eq!(parse_list(&field), reference::parse_list(&field));
                prop_assert_eq!(parse_dictionary(&field), reference::parse_dictionary(&field));
            }
        }
    }

    #[test]
    fn a_dictionary_naming_any_one_key_is_read() {
        for (field, dictionary) in [
            (
                "limit=10",
                Dictionary {
                    limit: Some(10),
                    ..Dictionary::default()
                },
            ),
            (
                "remaining=5",
                Dictionary {
                    remaining: Some(5),
                    ..Dictionary::default()
                },
            ),
            (
                "reset=3",
                Dictionary {
                    reset: Some(3),
                    ..Dictionary::default()
                },
            ),
        ] {
            assert_eq!(parse_dictionary(field), Some(dictionary), "{field}");
        }
    }

    /// Twelve integer digits are the most a Decimal may have, and allowed; `/` is a base64
    /// symbol. The sfv differential proptests reach these only rarely.
    #[test]
    fn boundary_values_of_the_bare_items_are_accepted() {
        for field in [
            r#""a";x=123456789012.5"#,
            r#""a";x=-123456789012.125"#,
            r#""a";pk=:ab/+:"#,
            r#""a";pk=:/w==:"#,
        ] {
            assert!(parse_list(field).is_some(), "{field}");
        }
    }
}
