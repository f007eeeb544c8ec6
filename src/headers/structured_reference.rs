//! The reference the hand-written structured-field parser is checked against: the same
//! reading of the `RateLimit` drafts, done with `sfv`'s visitors. Compiled for tests and for
//! the fuzz crate only.

use std::borrow::Cow;
use std::fmt;

use sfv::visitor::{
    DictionaryVisitor, EntryVisitor, Ignored, InnerListVisitor, ItemVisitor, ListVisitor, Never,
    ParameterVisitor,
};
use sfv::{BareItemFromInput, KeyRef, Parser};

use super::Unit;
use super::structured::{self, Dictionary, Member};

/// The members of a list field; `None` if the field is not one the drafts allow.
pub(crate) fn parse_list(field: &str) -> Option<structured::Members<'_>> {
    Parser::new(field)
        .parse_list_with_visitor(Members::default())
        .ok()
        .map(Into::into)
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
        // Unknown parameters (`pk`, `burst`, `comment`) are extensions: skipped.
        let figure = match key.as_str() {
            "r" => &mut self.member.remaining,
            "t" => &mut self.member.reset,
            "q" => &mut self.member.quota,
            "w" => &mut self.member.window,
            "qu" => {
                let requests = match &value {
                    BareItemFromInput::String(unit) => unit.as_str() == "requests",
                    BareItemFromInput::Token(unit) => unit.as_str() == "requests",
                    _ => false,
                };
                self.member.unit = if requests {
                    Unit::Requests
                } else {
                    Unit::Other
                };
                return Ok(());
            }
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
        Ok(self
            .figure(key.as_str())
            .map(|(figure, keep)| DictionaryFigure(figure, keep)))
    }

    fn finish(self) -> Result<Dictionary, Unusable> {
        Ok(self)
    }
}

struct DictionaryFigure<'a>(&'a mut Option<u64>, fn(u64, u64) -> u64);

impl<'de> EntryVisitor<'de> for DictionaryFigure<'_> {
    type Error = Unusable;

    fn item(self) -> Result<impl ItemVisitor<'de>, Unusable> {
        let DictionaryFigure(figure, keep) = self;
        Ok(move |item: BareItemFromInput<'de>| {
            let value = count(&item)?;
            *figure = Some(figure.map_or(value, |known| keep(known, value)));
            Ok::<_, Unusable>(Ignored)
        })
    }

    fn inner_list(self) -> Result<impl InnerListVisitor<'de>, Unusable> {
        Err::<Never, _>(Unusable)
    }
}
