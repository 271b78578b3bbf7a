//! A Client ID Metadata Document for the TypeScript SDK's test: served over https on loopback
//! by `tests/compat/doc_server.py`, under a CA openssl makes for the test (the gateway trusts it
//! through `Config::oauth_document_roots`, and fetches from loopback under
//! `WAZAP_OAUTH_PRIVATE_DOCUMENTS`).

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt as _, BufReader};

use super::REDIRECT;
use crate::compat::{compat_dir, python};

/// A Client ID Metadata Document served over https on loopback (`doc_server.py`) under a CA
/// made for the test (openssl): its URL (the client id) and the CA's certificate (DER).
pub(super) struct Document {
    pub(super) url: String,
    pub(super) root: Vec<u8>,
    _server: tokio::process::Child,
    _dir: TempDir,
}

/// A directory removed when dropped.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Document {
    pub(super) async fn serve(name: &str) -> anyhow::Result<Self> {
        let dir = TempDir(
            std::env::temp_dir().join(format!("wazap-cimd-{}", wazap_tests::random_hex(6))),
        );
        std::fs::create_dir_all(&dir.0)?;
        std::fs::write(
            dir.0.join("leaf.ext"),
            "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
        )?;
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        for step in [
            &[
                &["req", "-x509"][..],
                &ec,
                &[
                    "-keyout",
                    "ca.key",
                    "-out",
                    "ca.pem",
                    "-days",
                    "1",
                    "-subj",
                    "/CN=wazap test CA",
                ],
            ]
            .concat(),
            &[
                &["req"][..],
                &ec,
                &[
                    "-keyout",
                    "leaf.key",
                    "-out",
                    "leaf.csr",
                    "-subj",
                    "/CN=127.0.0.1",
                ],
            ]
            .concat(),
            &[
                "x509",
                "-req",
                "-in",
                "leaf.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "leaf.pem",
                "-days",
                "1",
                "-extfile",
                "leaf.ext",
            ][..]
                .to_vec(),
            &["x509", "-in", "ca.pem", "-outform", "der", "-out", "ca.der"][..].to_vec(),
        ] {
            let out = std::process::Command::new("openssl")
                .args(step)
                .current_dir(&dir.0)
                .output()?;
            anyhow::ensure!(
                out.status.success(),
                "openssl {step:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let document = json!({
            "client_id": "URL",
            "client_name": name,
            "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        });
        let mut server = tokio::process::Command::new(python())
            .arg(compat_dir().join("doc_server.py"))
            .arg(dir.0.join("leaf.pem"))
            .arg(dir.0.join("leaf.key"))
            .arg(document.to_string())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let mut lines = BufReader::new(server.stdout.take().expect("stdout")).lines();
        let url = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
            .await??
            .ok_or_else(|| anyhow::anyhow!("doc_server.py ended early"))?;
        Ok(Self {
            url,
            root: std::fs::read(dir.0.join("ca.der"))?,
            _server: server,
            _dir: dir,
        })
    }
}
