//! Strategies for the wire types of `shared/src/wire/*` (and the error and grant types they
//! carry). Struct literals name every field, so a field added to a type fails to compile here
//! until it is generated too; each enum's variant list goes through a `match` without a
//! wildcard for the same reason.

use chrono::{DateTime, TimeZone as _, Utc};
use proptest::collection::vec;
use proptest::option::of;
use proptest::prelude::*;
use proptest::sample::select;
use wazap_shared::error::{ErrorCode, RpcError};
use wazap_shared::grant::ConnectionKind;
use wazap_shared::wire::grants::{
    AccountRule, AccountSelection, ChatSelection, ReadScope, SendMode, SendPermission,
};
use wazap_shared::wire::message::{
    AttachmentInfo, ChatKind, Message, MessageType, ReactionCount, Sender, SyncState,
};
use wazap_shared::wire::send::{MediaKind, MediaRef, SendState};

/// Any text: every Unicode scalar, quotes, backslashes and control characters included.
pub(crate) fn text() -> impl Strategy<Value = String> + Clone {
    any::<String>()
}

/// A few items of `s`.
pub(crate) fn few<S: Strategy + Clone>(s: S) -> impl Strategy<Value = Vec<S::Value>> + Clone {
    vec(s, 0..4)
}

/// Any instant of the years 1–9999 (what RFC 3339 spells), to the nanosecond.
pub(crate) fn instant() -> impl Strategy<Value = DateTime<Utc>> + Clone {
    // 0001-01-01T00:00:00Z ..= 9999-12-31T23:59:59Z
    (-62_135_596_800i64..=253_402_300_799, 0u32..1_000_000_000)
        .prop_map(|(s, n)| Utc.timestamp_opt(s, n).single().expect("in chrono's range"))
}

/// Every variant of an enum, checked exhaustive by `check` (a `match` without a wildcard).
fn every<T: Clone + std::fmt::Debug + 'static>(
    all: Vec<T>,
    check: fn(&T),
) -> impl Strategy<Value = T> + Clone {
    all.iter().for_each(check);
    select(all)
}

pub(crate) fn message_type() -> impl Strategy<Value = MessageType> + Clone {
    // `MessageType::ALL` is the list the worker itself parses by; the match checks it whole.
    every(MessageType::ALL.to_vec(), |t| match t {
        MessageType::Text
        | MessageType::Image
        | MessageType::Video
        | MessageType::Audio
        | MessageType::Voice
        | MessageType::Document
        | MessageType::Sticker
        | MessageType::Location
        | MessageType::Contact
        | MessageType::Poll
        | MessageType::Reaction
        | MessageType::Deleted
        | MessageType::ViewOnce
        | MessageType::Call
        | MessageType::Event
        | MessageType::Invite
        | MessageType::System
        | MessageType::Unknown => {}
    })
}

pub(crate) fn chat_kind() -> impl Strategy<Value = ChatKind> + Clone {
    every(vec![ChatKind::Direct, ChatKind::Group], |k| match k {
        ChatKind::Direct | ChatKind::Group => {}
    })
}

pub(crate) fn sync_state() -> impl Strategy<Value = SyncState> + Clone {
    use SyncState::*;
    every(
        vec![Live, CatchingUp, Offline, Paused, Unpaired, Demo],
        |s| match s {
            Live | CatchingUp | Offline | Paused | Unpaired | Demo => {}
        },
    )
}

pub(crate) fn error_code() -> impl Strategy<Value = ErrorCode> + Clone {
    every(ErrorCode::ALL.to_vec(), |c| {
        use ErrorCode::*;
        match c {
            Unauthenticated | InvalidArgument | InvalidBase64 | InvalidMedia | MediaTooLarge
            | RequestTooLarge | AccountNotFound | ChatNotFound | NotFound | SendNotPermitted
            | SessionCannotSend | SendRequestConflict | SendJournalFull | Busy | RateLimited
            | WorkerUnavailable | DeadlineExceeded | SendOutcomeUnknown | Internal => {}
        }
    })
}

pub(crate) fn rpc_error() -> impl Strategy<Value = RpcError> + Clone {
    (error_code(), text()).prop_map(|(code, message)| RpcError { code, message })
}

pub(crate) fn media_kind() -> impl Strategy<Value = MediaKind> + Clone {
    use MediaKind::*;
    every(vec![Image, Video, Audio, Document], |k| match k {
        Image | Video | Audio | Document => {}
    })
}

pub(crate) fn send_state() -> impl Strategy<Value = SendState> + Clone {
    use SendState::*;
    every(vec![Accepted, OutcomeUnknown, Failed], |s| match s {
        Accepted | OutcomeUnknown | Failed => {}
    })
}

pub(crate) fn send_mode() -> impl Strategy<Value = SendMode> + Clone {
    use SendMode::*;
    every(vec![None, Selected, All], |m| match m {
        None | Selected | All => {}
    })
}

pub(crate) fn connection_kind() -> impl Strategy<Value = ConnectionKind> + Clone {
    use ConnectionKind::*;
    every(vec![Local, Remote], |k| match k {
        Local | Remote => {}
    })
}

pub(crate) fn chat_selection() -> impl Strategy<Value = ChatSelection> + Clone {
    prop_oneof![
        Just(ChatSelection::All),
        few(text()).prop_map(|chats| ChatSelection::Selected { chats }),
        few(text()).prop_map(|chats| ChatSelection::AllExcept { chats }),
    ]
}

pub(crate) fn read_scope() -> impl Strategy<Value = ReadScope> + Clone {
    let rule = (chat_selection(), of(instant()), of(instant()));
    let accounts = prop_oneof![
        Just(AccountSelection::default()),
        Just(AccountSelection::All),
        few("[a-z0-9][a-z0-9-]{0,8}").prop_map(|accounts| AccountSelection::Only { accounts }),
    ];
    let per_account = proptest::collection::btree_map(
        "[a-z0-9][a-z0-9-]{0,8}",
        (chat_selection(), of(instant()), of(instant())).prop_map(|(chats, since, until)| {
            AccountRule {
                chats,
                since,
                until,
            }
        }),
        0..3,
    );
    (rule, accounts, per_account).prop_map(|((chats, since, until), accounts, per_account)| {
        ReadScope {
            chats,
            since,
            until,
            accounts,
            per_account,
        }
    })
}

pub(crate) fn send_permission() -> impl Strategy<Value = SendPermission> + Clone {
    (send_mode(), few(text()), any::<u32>()).prop_map(|(mode, chats, revision)| SendPermission {
        mode,
        chats,
        revision,
    })
}

pub(crate) fn sender() -> impl Strategy<Value = Sender> + Clone {
    (of(text()), of(text())).prop_map(|(name, chat_id)| Sender { name, chat_id })
}

pub(crate) fn attachment_info() -> impl Strategy<Value = AttachmentInfo> + Clone {
    (
        text(),
        message_type(),
        text(),
        of(text()),
        of(any::<u64>()),
        of(any::<u32>()),
        of(text()),
    )
        .prop_map(
            |(attachment_id, kind, mime_type, filename, size, seconds, caption)| AttachmentInfo {
                attachment_id,
                kind,
                mime_type,
                filename,
                size,
                seconds,
                caption,
            },
        )
}

pub(crate) fn reaction() -> impl Strategy<Value = ReactionCount> + Clone {
    (text(), any::<u32>()).prop_map(|(emoji, count)| ReactionCount { emoji, count })
}

pub(crate) fn message() -> impl Strategy<Value = Message> + Clone {
    (
        (
            text(),
            text(),
            instant(),
            message_type(),
            text(),
            any::<bool>(),
        ),
        (sender(), any::<bool>(), of(text()), any::<bool>()),
        (of(attachment_info()), any::<bool>(), few(reaction())),
    )
        .prop_map(
            |(
                (message_id, chat_id, timestamp, kind, text, from_me),
                (sender, private, reply_to, mentions_me),
                (attachment, edited, reactions),
            )| Message {
                message_id,
                chat_id,
                timestamp,
                kind,
                text,
                from_me,
                sender,
                private,
                reply_to,
                mentions_me,
                attachment,
                edited,
                reactions,
            },
        )
}

pub(crate) fn media_ref() -> impl Strategy<Value = MediaRef> + Clone {
    (text(), any::<u64>()).prop_map(|(object, size)| MediaRef { object, size })
}
