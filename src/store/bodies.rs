//! What a request sent and what came back, kept on request (`[plan] store`): the body of
//! every item of a run's request set (`request_bodies`) and the generated text of every
//! request (`response_texts`). Blobs are zlib-compressed in SQLite's sqlar convention: a
//! blob as long as its `*_bytes` column is stored raw, because compressing did not make it
//! smaller. `sqlar_uncompress(blob, bytes)` in the sqlite3 shell reads both.

use std::io::{Read, Write};

use flate2::read::ZlibDecoder;
use flate2::write::ZlibEncoder;
use flate2::Compression;
use rusqlite::{params, OptionalExtension};

use super::{SqlContext, Store, StoreError};

/// The stored form of `data`: compressed, or as it is when that is not smaller.
pub(crate) fn pack(data: &[u8]) -> Vec<u8> {
    let mut enc = ZlibEncoder::new(Vec::with_capacity(data.len() / 2), Compression::default());
    match enc.write_all(data).and_then(|()| enc.finish()) {
        Ok(z) if z.len() < data.len() => z,
        _ => data.to_vec(),
    }
}

/// `data` back from its stored form and original length.
pub fn unpack(blob: &[u8], bytes: usize, what: &str) -> Result<Vec<u8>, StoreError> {
    if blob.len() == bytes {
        return Ok(blob.to_vec());
    }
    let mut out = Vec::with_capacity(bytes);
    ZlibDecoder::new(blob)
        .take(bytes as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| StoreError::Corrupt {
            what: format!("{what}: {e}"),
        })?;
    if out.len() != bytes {
        return Err(StoreError::Corrupt {
            what: format!("{what}: {} bytes, {bytes} recorded", out.len()),
        });
    }
    Ok(out)
}

/// What was kept of one request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredContent {
    /// The body as sent, if bodies were kept.
    pub body: Option<Vec<u8>>,
    /// The response's text, if texts were kept.
    pub text: Option<String>,
}

impl Store {
    /// Keeps the bodies of a run's items (rewriting any of the same item).
    pub(crate) fn write_bodies<'a>(
        &mut self,
        run_id: &str,
        bodies: impl IntoIterator<Item = (u64, &'a [u8])>,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction().doing("writing request bodies")?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO request_bodies (run_id, item, body_bytes, body) \
                     VALUES (?1, ?2, ?3, ?4)",
                )
                .doing("writing request bodies")?;
            for (item, body) in bodies {
                stmt.execute(params![run_id, item as i64, body.len() as i64, pack(body)])
                    .doing("writing request bodies")?;
            }
        }
        tx.commit().doing("writing request bodies")
    }

    /// Keeps the response texts of a batch of requests, by request index.
    pub(crate) fn write_texts<'a>(
        &mut self,
        run_id: &str,
        texts: impl IntoIterator<Item = (u64, &'a str)>,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction().doing("writing response texts")?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO response_texts (run_id, request_index, text_bytes, text) \
                     VALUES (?1, ?2, ?3, ?4)",
                )
                .doing("writing response texts")?;
            for (index, text) in texts {
                let bytes = text.as_bytes();
                stmt.execute(params![
                    run_id,
                    index as i64,
                    bytes.len() as i64,
                    pack(bytes)
                ])
                .doing("writing response texts")?;
            }
        }
        tx.commit().doing("writing response texts")
    }

    /// The body (of the request's item) and text kept for one request.
    pub fn stored_content(
        &self,
        run_id: &str,
        index: u64,
        item: u64,
    ) -> Result<StoredContent, StoreError> {
        let blob = |sql: &str, key: u64| -> Result<Option<(Vec<u8>, usize)>, StoreError> {
            self.conn
                .query_row(sql, params![run_id, key as i64], |r| {
                    Ok((r.get::<_, Vec<u8>>(0)?, r.get::<_, i64>(1)? as usize))
                })
                .optional()
                .doing("reading stored bodies")
        };
        let body = blob(
            "SELECT body, body_bytes FROM request_bodies WHERE run_id = ?1 AND item = ?2",
            item,
        )?
        .map(|(b, n)| unpack(&b, n, &format!("body of item {item}")))
        .transpose()?;
        let text = blob(
            "SELECT text, text_bytes FROM response_texts WHERE run_id = ?1 AND request_index = ?2",
            index,
        )?
        .map(|(b, n)| unpack(&b, n, &format!("text of request {index}")))
        .transpose()?
        .map(|t| String::from_utf8_lossy(&t).into_owned());
        Ok(StoredContent { body, text })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packing_round_trips_and_keeps_short_data_raw() {
        let long = "the same words again and again ".repeat(40);
        let packed = pack(long.as_bytes());
        assert!(packed.len() < long.len() / 4);
        assert_eq!(
            unpack(&packed, long.len(), "t").ok(),
            Some(long.into_bytes())
        );
        assert_eq!(pack(b"hi"), b"hi");
        assert_eq!(unpack(b"hi", 2, "t").ok(), Some(b"hi".to_vec()));
        assert!(unpack(b"not zlib at all", 40, "t").is_err());
    }

    #[test]
    fn a_run_begun_again_forgets_what_its_earlier_attempt_kept() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let suite = crate::store::SuiteInfo::new("demo", "[plan]\nname = \"demo\"\n");
        let mut store = Store::create(dir.path(), &suite).unwrap_or_else(|e| panic!("{e}"));
        let run = crate::store::RunRow {
            id: "r1".into(),
            ordinal: 1,
            axes: serde_json::json!({}),
            settings: serde_json::json!({}),
        };
        store
            .register_runs(&[run])
            .unwrap_or_else(|e| panic!("{e}"));
        store.begin_run("r1").unwrap_or_else(|e| panic!("{e}"));
        let body = b"{\"model\": \"m\"}".to_vec();
        store
            .write_bodies("r1", [(0, &body[..])])
            .unwrap_or_else(|e| panic!("{e}"));
        store
            .write_texts("r1", [(7, "an answer")])
            .unwrap_or_else(|e| panic!("{e}"));
        let kept = store
            .stored_content("r1", 7, 0)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(kept.body, Some(body));
        assert_eq!(kept.text.as_deref(), Some("an answer"));
        store.begin_run("r1").unwrap_or_else(|e| panic!("{e}"));
        let wiped = store
            .stored_content("r1", 7, 0)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(wiped, StoredContent::default());
    }
}
