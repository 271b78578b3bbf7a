//! The worker's one error type below the RPC edge. Domain code (archive, grants, owner, send)
//! returns [`Error`]: either a refusal the caller may learn of (a DESIGN §7 code and a message
//! that names a field or a state, never a value), or an internal failure (what was being done
//! and its cause), which the caller never sees. Only the RPC edge turns an [`Error`] into the
//! wire's `RpcError`, and that is where an internal failure is logged, once, with a trace id.

use wazap_shared::{ErrorCode, RpcError};

/// Why a worker operation did not succeed.
#[derive(Debug)]
pub enum Error {
    /// Refused for a reason the caller may know.
    Refused {
        /// The stable code.
        code: ErrorCode,
        /// What was wrong: a field or a state, never a value the caller sent.
        message: String,
    },
    /// Failed for a reason the caller must not see (Postgres, NATS, a connector, a bug).
    Internal {
        /// What was being done (`"send permission: update"`).
        context: &'static str,
        /// The cause, for the log line.
        source: anyhow::Error,
    },
}

/// A worker result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// A refusal with `code`.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Refused {
            code,
            message: message.into(),
        }
    }

    /// `invalid_argument` naming `field` (never its value) and why.
    pub fn invalid(field: &str, why: &str) -> Self {
        RpcError::invalid(field, why).into()
    }

    /// An internal failure while doing `context`.
    pub fn internal(context: &'static str, source: impl Into<anyhow::Error>) -> Self {
        Self::Internal {
            context,
            source: source.into(),
        }
    }

    /// Log an internal failure at error level with a trace id (the current request's trace
    /// when there is one), and return that id. A database error is logged by its SQLSTATE and
    /// schema names only: Postgres messages can quote row values. Refusals are not logged.
    pub fn log(&self) -> String {
        let trace_id = wazap_shared::telemetry::current_trace_id()
            .unwrap_or_else(|| uuid::Uuid::new_v4().simple().to_string()[..16].to_owned());
        let Self::Internal { context, source } = self else {
            return trace_id;
        };
        match source
            .chain()
            .find_map(|c| c.downcast_ref::<tokio_postgres::Error>())
        {
            Some(pg) => {
                let db = pg.as_db_error();
                tracing::error!(
                    trace_id = %trace_id,
                    context,
                    sqlstate = pg.code().map(|c| c.code()).unwrap_or("none"),
                    table = db.and_then(|d| d.table()),
                    constraint = db.and_then(|d| d.constraint()),
                    closed = pg.is_closed(),
                    "database error"
                );
            }
            None => tracing::error!(
                trace_id = %trace_id,
                context,
                cause = %redacted(source.as_ref()),
                "internal error"
            ),
        }
        trace_id
    }

    /// What the caller is told (for an internal failure, only that it was one).
    pub fn message(&self) -> &str {
        match self {
            Self::Refused { message, .. } => message,
            Self::Internal { .. } => "internal error",
        }
    }

    /// The code the caller gets (`internal` for an internal failure).
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::Refused { code, .. } => *code,
            Self::Internal { .. } => ErrorCode::Internal,
        }
    }
}

/// An internal failure's cause is its `source`, so a command-line caller (`anyhow`) prints the
/// whole chain; the RPC edge never does.
impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Refused { .. } => None,
            Self::Internal { source, .. } => Some(source.as_ref()),
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Refused { code, message } => write!(f, "{code}: {message}"),
            Self::Internal { context, .. } => write!(f, "internal error: {context}"),
        }
    }
}

/// A refusal from one of the shared checkers (`wazap_shared::ids`, the wire types).
impl From<RpcError> for Error {
    fn from(e: RpcError) -> Self {
        Self::new(e.code, e.message)
    }
}

impl From<tokio_postgres::Error> for Error {
    fn from(e: tokio_postgres::Error) -> Self {
        Self::internal("database", e)
    }
}

impl From<deadpool_postgres::PoolError> for Error {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        Self::internal("database: pool", e)
    }
}

/// An error and its causes as they may be logged: each cause's message, joined by `: ` (as
/// `{:#}` prints an `anyhow` chain), except that a Postgres error shows only its SQLSTATE, its
/// severity and the table and constraint it names. Its message and DETAIL can quote row values
/// (`Key (name)=(…) already exists`, `invalid input syntax for type uuid: "…"`), which are the
/// owner's data or a token's hash and must never reach a log line. (Other Postgres failures —
/// a refused connection, a timeout — carry no values and are shown as they are.)
pub fn redacted<'a>(error: &'a (dyn std::error::Error + 'static)) -> Redacted<'a> {
    Redacted(error)
}

/// See [`redacted`].
pub struct Redacted<'a>(&'a (dyn std::error::Error + 'static));

impl std::fmt::Display for Redacted<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut next = Some(self.0);
        let mut first = true;
        while let Some(e) = next {
            if !first {
                f.write_str(": ")?;
            }
            first = false;
            let db = e
                .downcast_ref::<tokio_postgres::Error>()
                .and_then(tokio_postgres::Error::as_db_error)
                .or_else(|| e.downcast_ref::<tokio_postgres::error::DbError>());
            let Some(db) = db else {
                write!(f, "{e}")?;
                next = e.source();
                continue;
            };
            // What the server said is not followed: only its code and the schema names.
            write!(
                f,
                "database error SQLSTATE {} ({})",
                db.code().code(),
                db.severity()
            )?;
            if let Some(table) = db.table() {
                write!(f, " table {table}")?;
            }
            if let Some(constraint) = db.constraint() {
                write!(f, " constraint {constraint}")?;
            }
            return Ok(());
        }
        Ok(())
    }
}

/// `.context("what was being done")` on any failure that is never the caller's to know (not
/// on a worker [`Error`]: that would hide a refusal as an internal failure).
pub trait Context<T> {
    /// An internal [`Error`] while doing `context`.
    fn context(self, context: &'static str) -> Result<T>;
}

impl<T, E: Into<anyhow::Error>> Context<T> for std::result::Result<T, E> {
    fn context(self, context: &'static str) -> Result<T> {
        self.map_err(|e| Error::internal(context, e))
    }
}
