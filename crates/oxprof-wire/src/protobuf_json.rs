//! protobuf's JSON printer (`MessageToJsonString` with `always_print_fields_with_no_presence`),
//! as XProf writes its proto bodies (`op_profile`, `pod_viewer`, `memory_profile`):
//! fields in field-number order, lowerCamelCase names, doubles as `SimpleDtoa`, strings
//! with protobuf's escapes (`<` `>` as `\u003c` `\u003e`).
//!
//! A body is a `serde_json::Value` shaped like the message, printed against a [`Message`]
//! schema that gives the field order (a tool declares the schema of its proto); or, for
//! large bodies, written field by field in field-number order with [`write_message`]
//! (no `Value` tree built first).

use crate::cxx_printf::format_g;
use serde_json::Value;
use std::fmt::Write as _;

/// A message's fields, in field-number order, with what each holds.
#[derive(Debug)]
pub struct Message {
    /// JSON name and kind of each field, in field-number order.
    pub fields: &'static [(&'static str, Field)],
}

/// What a field holds.
#[derive(Debug, Clone, Copy)]
pub enum Field {
    /// A scalar, or repeated scalars.
    Scalar,
    /// A message, or repeated messages.
    Message(&'static Message),
    /// A map with integer keys, printed in ascending key order (protobuf prints its hash
    /// map's order, which changes from process to process), of messages or scalars.
    IntKeyMap(Option<&'static Message>),
}

/// `value` as protobuf's JSON printer writes the message `message` (`None`: keys in byte
/// order). Keys the schema does not name come after the named ones, in byte order.
/// Integers print as integers, other numbers as [`format_double`].
pub fn print(value: &Value, message: Option<&Message>) -> String {
    let mut out = String::new();
    write_value(value, message, &mut out);
    out
}

/// Appends `value` printed as [`print`] prints it.
pub fn write_value(value: &Value, message: Option<&Message>, out: &mut String) {
    match value {
        Value::Number(number) => match (number.as_i64(), number.as_u64()) {
            (Some(int), _) => {
                let _ = write!(out, "{int}");
            }
            (None, Some(uint)) => {
                let _ = write!(out, "{uint}");
            }
            _ => out.push_str(&format_double(number.as_f64().unwrap_or(0.0))),
        },
        Value::String(text) => write_string(out, text),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_value(item, message, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let fields = message.map_or(&[][..], |m| m.fields);
            let rank = |key: &str| fields.iter().position(|(name, _)| *name == key).unwrap_or(usize::MAX);
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| rank(a.0).cmp(&rank(b.0)).then_with(|| a.0.cmp(b.0)));
            out.push('{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_string(out, key);
                out.push(':');
                match fields.iter().find(|(name, _)| name == key).map(|&(_, kind)| kind) {
                    Some(Field::Message(child)) => write_value(item, Some(child), out),
                    Some(Field::IntKeyMap(child)) => write_int_key_map(item, child, out),
                    Some(Field::Scalar) | None => write_value(item, None, out),
                }
            }
            out.push('}');
        }
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
    }
}

/// A proto map with integer keys, in ascending key order (see [`Field::IntKeyMap`]).
fn write_int_key_map(value: &Value, child: Option<&Message>, out: &mut String) {
    let Value::Object(map) = value else {
        write_value(value, child, out);
        return;
    };
    let mut entries: Vec<(&String, &Value)> = map.iter().collect();
    entries.sort_by_key(|(key, _)| (key.parse::<i64>().unwrap_or(i64::MAX), key.as_str()));
    out.push('{');
    for (index, (key, item)) in entries.into_iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_string(out, key);
        out.push(':');
        write_value(item, child, out);
    }
    out.push('}');
}

/// protobuf's `SimpleDtoa` as its JSON printer writes doubles: `%.15g` when that reads back
/// as the same double, else `%.17g`; non-finite values as the quoted strings `"NaN"`,
/// `"Infinity"`, `"-Infinity"`.
pub fn format_double(value: f64) -> String {
    if value.is_nan() {
        return "\"NaN\"".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "\"Infinity\"".into() } else { "\"-Infinity\"".into() };
    }
    let short = format_g(value, 15);
    if short.parse::<f64>().ok() == Some(value) { short } else { format_g(value, 17) }
}

/// Appends `text` as a JSON string with protobuf's JSON printer escapes (control
/// characters, `<`, `>`, U+2028 and U+2029 as `\uXXXX`).
pub fn write_string(out: &mut String, text: &str) {
    crate::json_string::write_escaped(out, text, |c| {
        crate::json_string::is_control(c) || matches!(c, '<' | '>' | '\u{2028}' | '\u{2029}')
    });
}

/// Writes one message into `out`: `build` adds its fields in field-number order (as
/// protobuf's printer with `always_print_fields_with_no_presence` writes every field).
pub fn write_message(out: &mut String, build: impl FnOnce(&mut MessageWriter<'_>)) {
    out.push('{');
    let mut message = MessageWriter { out, first: true };
    build(&mut message);
    message.out.push('}');
}

/// The fields of one message being written ([`write_message`]): each method writes one
/// field, named by its JSON name, the way protobuf's printer writes its type.
#[derive(Debug)]
pub struct MessageWriter<'a> {
    out: &'a mut String,
    first: bool,
}

impl MessageWriter<'_> {
    fn key(&mut self, name: &str) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
        write_string(self.out, name);
        self.out.push(':');
    }

    /// An `int64` (a quoted string).
    pub fn int64(&mut self, name: &str, value: i64) -> &mut Self {
        self.key(name);
        let _ = write!(self.out, "\"{value}\"");
        self
    }

    /// A `uint64` (a quoted string).
    pub fn uint64(&mut self, name: &str, value: u64) -> &mut Self {
        self.key(name);
        let _ = write!(self.out, "\"{value}\"");
        self
    }

    /// An `int32` (a number).
    pub fn int32(&mut self, name: &str, value: i32) -> &mut Self {
        self.key(name);
        let _ = write!(self.out, "{value}");
        self
    }

    /// A `double` ([`format_double`]).
    pub fn double(&mut self, name: &str, value: f64) -> &mut Self {
        self.key(name);
        self.out.push_str(&format_double(value));
        self
    }

    /// A `string`, or an enum by its value's name.
    pub fn string(&mut self, name: &str, value: &str) -> &mut Self {
        self.key(name);
        write_string(self.out, value);
        self
    }

    /// A `repeated string`.
    pub fn strings<'s>(&mut self, name: &str, values: impl IntoIterator<Item = &'s str>) -> &mut Self {
        self.key(name);
        self.out.push('[');
        for (index, value) in values.into_iter().enumerate() {
            if index > 0 {
                self.out.push(',');
            }
            write_string(self.out, value);
        }
        self.out.push(']');
        self
    }

    /// A message field, its fields added by `build`.
    pub fn message(&mut self, name: &str, build: impl FnOnce(&mut MessageWriter<'_>)) -> &mut Self {
        self.key(name);
        write_message(self.out, build);
        self
    }

    /// A `repeated` message field: one message per item, its fields added by `build`.
    pub fn messages<T>(
        &mut self,
        name: &str,
        items: impl IntoIterator<Item = T>,
        mut build: impl FnMut(&mut MessageWriter<'_>, T),
    ) -> &mut Self {
        self.key(name);
        self.out.push('[');
        for (index, item) in items.into_iter().enumerate() {
            if index > 0 {
                self.out.push(',');
            }
            write_message(self.out, |m| build(m, item));
        }
        self.out.push(']');
        self
    }

    /// A `map<string, Message>` in the entries' order, each value's fields added by `build`.
    pub fn message_map<'k, T>(
        &mut self,
        name: &str,
        entries: impl IntoIterator<Item = (&'k str, T)>,
        mut build: impl FnMut(&mut MessageWriter<'_>, T),
    ) -> &mut Self {
        self.key(name);
        self.out.push('{');
        for (index, (key, value)) in entries.into_iter().enumerate() {
            if index > 0 {
                self.out.push(',');
            }
            write_string(self.out, key);
            self.out.push(':');
            write_message(self.out, |m| build(m, value));
        }
        self.out.push('}');
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn doubles_round_trip_like_simple_dtoa() {
        assert_eq!(format_double(0.069_671_487_717_328_98), "0.069671487717328978");
        assert_eq!(format_double(8.142_000_327_721_873e-6), "8.142000327721873e-06");
        assert_eq!(format_double(9_456_212_000.0), "9456212000");
        assert_eq!(format_double(1e16), "1e+16");
        assert_eq!(format_double(0.5), "0.5");
        assert_eq!(format_double(0.0), "0");
        assert_eq!(format_double(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(format_double(0.166667), "0.166667");
        assert_eq!(format_double(7.54108e-08), "7.54108e-08");
        assert_eq!(format_double(1e15), "1e+15");
        assert_eq!(format_double(123456.0), "123456");
        assert_eq!(format_double(f64::NAN), "\"NaN\"");
        assert_eq!(format_double(f64::NEG_INFINITY), "\"-Infinity\"");
    }

    #[test]
    fn strings_escape_html_and_controls() {
        let mut out = String::new();
        write_string(&mut out, "a<b>\"\u{1}\u{2028}é");
        assert_eq!(out, "\"a\\u003cb\\u003e\\\"\\u0001\\u2028é\"");
    }

    static INNER: Message = Message { fields: &[("z", Field::Scalar), ("a", Field::Scalar)] };
    static OUTER: Message = Message {
        fields: &[("name", Field::Scalar), ("inner", Field::Message(&INNER)), ("byId", Field::IntKeyMap(Some(&INNER)))],
    };

    #[test]
    fn messages_are_written_field_by_field() {
        let mut out = String::new();
        write_message(&mut out, |m| {
            m.message_map("byId", [("a<", 1), ("b", 2)], |m, n| {
                m.int64("n", n).double("half", n as f64 / 2.0);
            })
            .int32("count", 2)
            .strings("names", ["x", "\u{1}"])
            .messages("items", [u64::MAX], |m, v| {
                m.uint64("v", v).string("kind", "ALLOCATION");
            });
        });
        assert_eq!(
            out,
            concat!(
                r#"{"byId":{"a\u003c":{"n":"1","half":0.5},"b":{"n":"2","half":1}},"count":2,"#,
                r#""names":["x","\u0001"],"items":[{"v":"18446744073709551615","kind":"ALLOCATION"}]}"#
            )
        );
    }

    #[test]
    fn fields_in_schema_order_and_maps_by_key() {
        let value = json!({"byId": {"10": {"a": 1, "z": 0.25}, "9": {}}, "extra": null, "inner": [{"a": "<", "z": true}],
            "name": "n"});
        assert_eq!(
            print(&value, Some(&OUTER)),
            r#"{"name":"n","inner":[{"z":true,"a":"\u003c"}],"byId":{"9":{},"10":{"z":0.25,"a":1}},"extra":null}"#
        );
    }
}
