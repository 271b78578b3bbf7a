//! The owner of the dashboard (DESIGN §4, §6): the password ([`password`]), sessions with their
//! CSRF tokens ([`session`]), failed-login throttling per source ([`source`]) and globally
//! ([`throttle`]), and the owner's views and edits of connections ([`connections`]), chats
//! ([`chats`]), the archive policy ([`policy`]), the linked account ([`account`]) and recent
//! sends ([`sends`]).
//!
//! All of it lives in the worker and Postgres, so any gateway serves any owner request; the
//! gateway checks Host, exact Origin and the absence of bearer tokens, the worker the session
//! and its CSRF token.

pub mod account;
pub mod chats;
pub mod connections;
pub mod password;
pub mod policy;
pub mod sends;
pub mod session;
pub mod source;
pub mod throttle;

pub use password::{bootstrap_password, set_password};
