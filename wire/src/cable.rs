//! ActionCable commands, as a client sends them on `/cable`: a JSON object with a string
//! `command` and a string `identifier` (itself JSON text naming the channel).

use serde_json::Value;

/// One client command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// `subscribe`, `unsubscribe`, `message`, or anything else (ignored by the server).
    pub verb: String,
    /// The subscription identifier, echoed byte for byte in every frame.
    pub identifier: String,
    /// The `channel` named inside the identifier, when it is JSON with a string `channel`.
    pub channel: Option<String>,
}

/// A frame that is not an ActionCable command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

/// The most bytes of a frame the parser looks at; the socket refuses larger frames before.
pub const MAX_FRAME: usize = 64 * 1024;

pub fn parse_command(frame: &str) -> Result<Command, Malformed> {
    if frame.len() > MAX_FRAME {
        return Err(Malformed);
    }
    let value: Value = serde_json::from_str(frame).map_err(|_| Malformed)?;
    let identifier = value.get("identifier").and_then(Value::as_str).ok_or(Malformed)?;
    let verb = value.get("command").and_then(Value::as_str).ok_or(Malformed)?;
    let channel = serde_json::from_str::<Value>(identifier)
        .ok()
        .and_then(|v| v.get("channel").and_then(Value::as_str).map(str::to_owned));
    Ok(Command { verb: verb.to_owned(), identifier: identifier.to_owned(), channel })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_non_commands() {
        let c = parse_command(r#"{"command":"subscribe","identifier":"{\"channel\":\"EventsChannel\"}"}"#);
        assert_eq!(
            c,
            Ok(Command {
                verb: "subscribe".into(),
                identifier: r#"{"channel":"EventsChannel"}"#.into(),
                channel: Some("EventsChannel".into()),
            })
        );
        let odd = parse_command(r#"{"command":"message","identifier":"not json"}"#).expect("a command");
        assert_eq!(odd.channel, None);
        for bad in ["", "null", "[]", "{}", r#"{"command":"subscribe"}"#, r#"{"command":1,"identifier":"x"}"#]
        {
            assert_eq!(parse_command(bad), Err(Malformed), "{bad}");
        }
    }
}
