//! History's system notices (`message_stub_type` without a message) in words, so an agent
//! reading a group's past sees "2 members added" rather than an empty `system` message. The
//! notice's parameters name members by JID: they are counted, never written out; only a
//! group name (create, rename) is quoted, and only when it does not look like a number or JID.
//! Notice types not listed keep an empty text.

use whatsapp_rust::waproto::whatsapp::web_message_info::StubType as S;

/// The words for a notice of `kind` with its `params`.
pub(super) fn words(kind: S, params: &[String]) -> String {
    let members = |done: &str| match params.len() {
        0 | 1 => format!("1 member {done}"),
        n => format!("{n} members {done}"),
    };
    let named = |what: &str, to: &str| match params.first().filter(|p| is_name(p)) {
        Some(name) => format!("{what} {to} “{name}”"),
        None => what.to_owned(),
    };
    match kind {
        S::GROUP_CREATE => named("Group created", "as"),
        S::GROUP_CHANGE_SUBJECT => named("Group name changed", "to"),
        S::GROUP_CHANGE_ICON => "Group icon changed".to_owned(),
        S::GROUP_CHANGE_INVITE_LINK => "Group invite link reset".to_owned(),
        S::GROUP_CHANGE_DESCRIPTION => "Group description changed".to_owned(),
        S::GROUP_CHANGE_RESTRICT | S::GROUP_CHANGE_ANNOUNCE => "Group settings changed".to_owned(),
        S::GROUP_PARTICIPANT_ADD => members("added"),
        S::GROUP_PARTICIPANT_REMOVE => members("removed"),
        S::GROUP_PARTICIPANT_PROMOTE => members("made admin"),
        S::GROUP_PARTICIPANT_DEMOTE => members("dismissed as admin"),
        S::GROUP_PARTICIPANT_INVITE => members("joined with the invite link"),
        S::GROUP_PARTICIPANT_LEAVE => members("left"),
        S::GROUP_PARTICIPANT_CHANGE_NUMBER => "A member changed their phone number".to_owned(),
        S::E2E_ENCRYPTED => "Messages are end-to-end encrypted".to_owned(),
        S::CALL_MISSED_VOICE => "Missed voice call".to_owned(),
        S::CALL_MISSED_VIDEO => "Missed video call".to_owned(),
        _ => String::new(),
    }
}

/// A group name fit to quote: some text, and nothing that could be a phone number or a JID.
fn is_name(p: &str) -> bool {
    let p = p.trim();
    !p.is_empty()
        && !p.contains('@')
        && !p
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '+' | ' ' | '-' | '(' | ')'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_count_members_and_never_write_their_numbers() {
        let jids = vec![
            "972501111111@s.whatsapp.net".to_owned(),
            "972502222222@s.whatsapp.net".to_owned(),
        ];
        assert_eq!(words(S::GROUP_PARTICIPANT_ADD, &jids), "2 members added");
        assert_eq!(
            words(S::GROUP_PARTICIPANT_LEAVE, &jids[..1]),
            "1 member left"
        );
        assert_eq!(
            words(S::GROUP_CHANGE_SUBJECT, &["Family 🏡".to_owned()]),
            "Group name changed to “Family 🏡”"
        );
        assert_eq!(
            words(S::GROUP_CREATE, &["Trip".to_owned()]),
            "Group created as “Trip”"
        );
        for odd in ["+972 50 111 1111", "972501111111@s.whatsapp.net", " "] {
            let w = words(S::GROUP_CHANGE_SUBJECT, &[odd.to_owned()]);
            assert_eq!(w, "Group name changed", "{odd}");
        }
        for kind in [S::GROUP_PARTICIPANT_REMOVE, S::GROUP_PARTICIPANT_PROMOTE] {
            let w = words(kind, &jids);
            assert!(!w.contains("9725"), "{w}");
        }
        assert_eq!(words(S::REVOKE, &jids), "");
    }
}
