//! The chat rules as pure functions: who a caller is and may do, what a valid message body is,
//! and which `@handles` a body mentions.

use agora_storage::chat::{Message, PrincipalKind, Source};
use agora_storage::ids::Handle;
use agora_storage::people::{Actor, CredentialKind, Principal, Role, Scope};

/// The longest message body, in characters (not bytes).
pub const MAX_BODY_CHARS: usize = 10_000;
/// The most distinct handles one message can mention.
pub const MAX_MENTIONS: usize = 50;

/// The principal id of [`Caller::system`]: not an id storage ever makes (those have a prefix).
const SYSTEM: &str = "system";

/// An authenticated caller, reduced to what the chat rules need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    /// The person or bot the credential acts for.
    pub principal_id: String,
    pub kind: PrincipalKind,
    pub handle: String,
    pub name: String,
    /// The person's role; `None` for a bot.
    pub role: Option<Role>,
    pub credential_id: String,
    pub credential: CredentialKind,
    pub scope: Scope,
    /// The person key's name, shown in `actor_label`.
    pub key_name: Option<String>,
}

impl Caller {
    pub fn from_principal(p: &Principal) -> Caller {
        let (principal_id, kind, handle, name, role) = match &p.actor {
            Actor::Person(person) => (
                person.id.clone(),
                PrincipalKind::Person,
                person.handle.clone(),
                person.name.clone(),
                Some(person.role),
            ),
            Actor::Bot(bot) => {
                (bot.id.clone(), PrincipalKind::Bot, bot.handle.clone(), bot.name.clone(), None)
            }
        };
        Caller {
            principal_id,
            kind,
            handle,
            name,
            role,
            credential_id: p.credential.pid.clone(),
            credential: p.credential.kind,
            scope: p.credential.scope,
            key_name: p.credential.name.clone(),
        }
    }

    /// The server acting on its own (accepting an invitation, removing a deleted bot): passes
    /// the membership check of a channel actor, and is never the author of a message.
    pub fn system() -> Caller {
        Caller {
            principal_id: SYSTEM.into(),
            kind: PrincipalKind::Person,
            handle: SYSTEM.into(),
            name: "agora".into(),
            role: Some(Role::Staff),
            credential_id: SYSTEM.into(),
            credential: CredentialKind::Session,
            scope: Scope::Write,
            key_name: None,
        }
    }

    pub fn is_system(&self) -> bool {
        self.principal_id == SYSTEM
    }

    /// `source` of what this caller posts (chat.md's table).
    pub fn source(&self) -> Source {
        match self.credential {
            CredentialKind::Session => Source::Human,
            CredentialKind::PersonKey | CredentialKind::Connector => Source::Agent,
            CredentialKind::Bot => Source::Bot,
        }
    }

    /// `actor_label` of what this caller posts (chat.md's forms).
    pub fn actor_label(&self) -> String {
        match self.credential {
            CredentialKind::Session | CredentialKind::Bot => self.name.clone(),
            CredentialKind::PersonKey => {
                format!("{}'s agent ({})", self.name, self.key_name.as_deref().unwrap_or("key"))
            }
            CredentialKind::Connector => format!("{} via connector", self.name),
        }
    }

    /// Every credential may write except a read-scope connector token.
    pub fn may_write(&self) -> bool {
        !(self.credential == CredentialKind::Connector && self.scope == Scope::Read)
    }

    /// Staff powers belong to a staff person's browser session only; keys and connectors act for a
    /// person but never get them.
    pub fn is_staff(&self) -> bool {
        self.credential == CredentialKind::Session && self.role == Some(Role::Staff)
    }

    pub fn is_guest(&self) -> bool {
        self.role == Some(Role::Guest)
    }

    /// A bot or an agent (person key, connector): software acting, not a person typing.
    pub fn is_software(&self) -> bool {
        self.source() != Source::Human
    }
}

/// Why a caller may not change a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    NotAuthor,
    PersonWroteIt,
}

impl Refusal {
    pub fn message(self, verb: &str) -> String {
        match self {
            Refusal::NotAuthor => format!("Only the author may {verb} this message."),
            Refusal::PersonWroteIt => {
                format!("A person wrote this message; a bot or an agent may not {verb} it.")
            }
        }
    }
}

/// Only the author edits, and a bot or agent never changes text a person wrote.
pub fn may_edit(caller: &Caller, message: &Message) -> Result<(), Refusal> {
    if caller.principal_id != message.author_id {
        return Err(Refusal::NotAuthor);
    }
    if caller.is_software() && message.source == Source::Human {
        return Err(Refusal::PersonWroteIt);
    }
    Ok(())
}

/// The author or staff deletes; a bot or agent still never removes what a person wrote.
pub fn may_delete(caller: &Caller, message: &Message) -> Result<(), Refusal> {
    if caller.is_staff() {
        return Ok(());
    }
    may_edit(caller, message)
}

/// A message body: 1 to 10,000 characters of plain text, not only white space, with no control
/// characters other than line breaks and tabs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageBody(String);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadBody {
    Empty,
    TooLong,
    ControlCharacter,
}

impl BadBody {
    pub fn reason(self) -> &'static str {
        match self {
            BadBody::Empty => "empty",
            BadBody::TooLong => "too_long",
            BadBody::ControlCharacter => "invalid_character",
        }
    }

    pub fn message(self) -> String {
        match self {
            BadBody::Empty => "body must contain text (1 to 10,000 characters)".into(),
            BadBody::TooLong => format!("body is longer than {MAX_BODY_CHARS} characters"),
            BadBody::ControlCharacter => {
                "body is plain text: control characters other than line breaks and tabs are not allowed"
                    .into()
            }
        }
    }
}

impl MessageBody {
    pub fn parse(text: String) -> Result<MessageBody, BadBody> {
        if text.trim().is_empty() {
            return Err(BadBody::Empty);
        }
        if text.chars().count() > MAX_BODY_CHARS {
            return Err(BadBody::TooLong);
        }
        if text.chars().any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t')) {
            return Err(BadBody::ControlCharacter);
        }
        Ok(MessageBody(text))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

/// The handles a body mentions as `@handle`, lowercase, each once, in order of appearance. An `@`
/// inside a word (an e-mail address) is not a mention; a trailing `.` or `-` ends the sentence, not
/// the handle.
pub fn parse_mentions(body: &str) -> Vec<String> {
    let is_handle_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-');
    let mut out: Vec<String> = Vec::new();
    let mut prev: Option<char> = None;
    for (i, c) in body.char_indices() {
        let at_word_start = prev.is_none_or(|p| !(p.is_alphanumeric() || matches!(p, '_' | '.' | '-' | '@')));
        prev = Some(c);
        if c != '@' || !at_word_start {
            continue;
        }
        let rest = &body[i + 1..];
        let len = rest.find(|c: char| !is_handle_char(c)).unwrap_or(rest.len());
        let candidate = rest[..len].trim_end_matches(['.', '-']).to_ascii_lowercase();
        if let Ok(handle) = Handle::parse(&candidate)
            && !out.iter().any(|h| h == handle.as_str())
            && out.len() < MAX_MENTIONS
        {
            out.push(handle.as_str().to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(credential: CredentialKind, role: Option<Role>) -> Caller {
        Caller {
            principal_id: if role.is_some() { "p_ada".into() } else { "b_bot".into() },
            kind: if role.is_some() { PrincipalKind::Person } else { PrincipalKind::Bot },
            handle: "ada".into(),
            name: "Ada".into(),
            role,
            credential_id: "k_1".into(),
            credential,
            scope: Scope::Write,
            key_name: Some("laptop".into()),
        }
    }

    fn message(author: &str, source: Source) -> Message {
        Message {
            channel_id: "c_x".into(),
            seq: 1,
            body: "hi".into(),
            source,
            actor_label: "x".into(),
            author_id: author.into(),
            author_kind: PrincipalKind::Person,
            author_handle: "ada".into(),
            version: 1,
            created_at: 0,
            edited_at: None,
            deleted: false,
            deleted_at: None,
            mentions: vec![],
        }
    }

    #[test]
    fn labels_and_sources_follow_chat_md() {
        let key = caller(CredentialKind::PersonKey, Some(Role::Staff));
        assert_eq!(key.actor_label(), "Ada's agent (laptop)");
        assert_eq!(key.source(), Source::Agent);
        let conn = caller(CredentialKind::Connector, Some(Role::Staff));
        assert_eq!(conn.actor_label(), "Ada via connector");
        assert_eq!(conn.source(), Source::Agent);
        let bot = Caller { name: "Build Bot".into(), ..caller(CredentialKind::Bot, None) };
        assert_eq!(bot.actor_label(), "Build Bot");
        assert_eq!(bot.source(), Source::Bot);
        let human = caller(CredentialKind::Session, Some(Role::Staff));
        assert_eq!(human.source(), Source::Human);
        assert!(human.is_staff());
        assert!(!key.is_staff(), "a person key never gets staff powers");
        let read = Caller { scope: Scope::Read, ..conn.clone() };
        assert!(!read.may_write());
        assert!(conn.may_write());
    }

    #[test]
    fn edit_and_delete_rules() {
        let human = caller(CredentialKind::Session, Some(Role::Guest));
        let agent = caller(CredentialKind::PersonKey, Some(Role::Staff));
        let staff =
            Caller { principal_id: "p_staff".into(), ..caller(CredentialKind::Session, Some(Role::Staff)) };
        let typed = message("p_ada", Source::Human);
        let by_agent = message("p_ada", Source::Agent);
        let other = message("p_bob", Source::Human);
        assert_eq!(may_edit(&human, &typed), Ok(()));
        assert_eq!(may_edit(&human, &by_agent), Ok(()), "a person may fix what their agent wrote");
        assert_eq!(may_edit(&agent, &typed), Err(Refusal::PersonWroteIt));
        assert_eq!(may_edit(&agent, &by_agent), Ok(()));
        assert_eq!(may_edit(&human, &other), Err(Refusal::NotAuthor));
        assert_eq!(may_edit(&staff, &other), Err(Refusal::NotAuthor), "staff delete, never edit");
        assert_eq!(may_delete(&staff, &other), Ok(()));
        assert_eq!(may_delete(&agent, &typed), Err(Refusal::PersonWroteIt));
        assert_eq!(may_delete(&human, &other), Err(Refusal::NotAuthor));
    }

    #[test]
    fn bodies() {
        assert!(MessageBody::parse("x".into()).is_ok());
        assert_eq!(MessageBody::parse("".into()), Err(BadBody::Empty));
        assert_eq!(MessageBody::parse(" \n\t ".into()), Err(BadBody::Empty));
        assert!(MessageBody::parse("é".repeat(10_000)).is_ok(), "characters, not bytes");
        assert_eq!(MessageBody::parse("a".repeat(10_001)), Err(BadBody::TooLong));
        assert_eq!(MessageBody::parse("a\u{0}b".into()), Err(BadBody::ControlCharacter));
        assert!(MessageBody::parse("line\nbreak\ttab".into()).is_ok());
    }

    #[test]
    fn mentions() {
        assert_eq!(parse_mentions("hi @ada and @bob."), vec!["ada", "bob"]);
        assert_eq!(parse_mentions("@Ada @ada @ada"), vec!["ada"]);
        assert_eq!(parse_mentions("mail ada@example.org"), Vec::<String>::new());
        assert_eq!(parse_mentions("(@build-bot) @a.b_c-d"), vec!["build-bot", "a.b_c-d"]);
        assert_eq!(parse_mentions("@ @_x @-y"), Vec::<String>::new());
        assert_eq!(parse_mentions("@@ada"), Vec::<String>::new());
        let many: String = (0..80).map(|i| format!("@u{i} ")).collect();
        assert_eq!(parse_mentions(&many).len(), MAX_MENTIONS);
    }
}
