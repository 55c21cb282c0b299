//! WebDataset tar shards (`*.tar` in a folder, as EvalScope's `flickr8k` hub copy
//! `clip-benchmark/wds_flickr8k` stores them): members sharing a key (the name up to its
//! first dot after the last `/`) form one sample, `KEY.jpg` (or png, jpeg, webp) with its
//! caption in `KEY.txt`. The shards are indexed once (each image's offset and length, each
//! caption's text); images are read from their shard when a request is built, so a large
//! set is never held in memory.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use super::DatasetError;

/// Largest caption read (a `.txt` member longer than this is cut).
const MAX_CAPTION: u64 = 64 * 1024;

/// One image of a shard: where its bytes are, and its caption.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShardImage {
    pub shard: PathBuf,
    /// The member's name in the shard.
    pub name: String,
    pub offset: u64,
    pub len: u64,
    pub mime: &'static str,
    pub caption: Option<String>,
}

fn read_err(path: &Path) -> impl Fn(std::io::Error) -> DatasetError + '_ {
    move |source| DatasetError::Read {
        path: path.to_path_buf(),
        source,
    }
}

/// The `.tar` files of a folder, in name order (empty when it holds none).
pub fn shards(dir: &Path) -> Result<Vec<PathBuf>, DatasetError> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(read_err(dir))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e.eq_ignore_ascii_case("tar")))
        .collect();
    out.sort();
    Ok(out)
}

/// `(key, extension)` of a member name: `a/b/0001.jpg` → (`a/b/0001`, `jpg`).
fn key_and_ext(name: &str) -> Option<(String, String)> {
    let slash = name.rfind('/').map_or(0, |i| i + 1);
    let dot = name[slash..].find('.')? + slash;
    Some((
        name[..dot].to_string(),
        name[dot + 1..].to_ascii_lowercase(),
    ))
}

fn mime(ext: &str) -> Option<&'static str> {
    match ext {
        "jpg" | "jpeg" => Some("image/jpeg"),
        "png" => Some("image/png"),
        "webp" => Some("image/webp"),
        _ => None,
    }
}

/// Every sample with an image in the shards, shard by shard in member order.
pub fn index(shards: &[PathBuf]) -> Result<Vec<ShardImage>, DatasetError> {
    let mut out = Vec::new();
    for shard in shards {
        let file = File::open(shard).map_err(read_err(shard))?;
        let mut archive = tar::Archive::new(file);
        let mut images: Vec<(String, ShardImage)> = Vec::new();
        let mut captions: BTreeMap<String, String> = BTreeMap::new();
        for entry in archive.entries().map_err(read_err(shard))? {
            let mut entry = entry.map_err(read_err(shard))?;
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let name = entry.path().map_err(read_err(shard))?.display().to_string();
            let Some((key, ext)) = key_and_ext(&name) else {
                continue;
            };
            if ext == "txt" {
                let mut text = String::new();
                let mut limited = (&mut entry).take(MAX_CAPTION);
                let mut bytes = Vec::new();
                limited.read_to_end(&mut bytes).map_err(read_err(shard))?;
                let caption = crate::text::normalize(String::from_utf8_lossy(&bytes).into_owned());
                text.push_str(caption.trim());
                captions.insert(key, text);
            } else if let Some(mime) = mime(&ext) {
                let image = ShardImage {
                    shard: shard.clone(),
                    name: name.clone(),
                    offset: entry.raw_file_position(),
                    len: entry.size(),
                    mime,
                    caption: None,
                };
                images.push((key, image));
            }
        }
        out.extend(images.into_iter().map(|(key, mut image)| {
            image.caption = captions.get(&key).cloned().filter(|c| !c.is_empty());
            image
        }));
    }
    Ok(out)
}

/// The bytes of one image, read from its shard.
pub fn read(image: &ShardImage) -> Result<Vec<u8>, DatasetError> {
    let mut file = File::open(&image.shard).map_err(read_err(&image.shard))?;
    file.seek(SeekFrom::Start(image.offset))
        .map_err(read_err(&image.shard))?;
    let mut bytes = Vec::with_capacity(image.len as usize);
    file.take(image.len)
        .read_to_end(&mut bytes)
        .map_err(read_err(&image.shard))?;
    if bytes.len() as u64 != image.len {
        return Err(DatasetError::Invalid(format!(
            "{}: an image ends early (the shard changed since it was indexed?)",
            image.shard.display()
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(path: &Path, members: &[(&str, &[u8])]) {
        let file = File::create(path).unwrap_or_else(|e| panic!("{e}"));
        let mut b = tar::Builder::new(file);
        for (name, data) in members {
            let mut h = tar::Header::new_gnu();
            h.set_size(data.len() as u64);
            h.set_mode(0o644);
            h.set_cksum();
            b.append_data(&mut h, name, *data)
                .unwrap_or_else(|e| panic!("{e}"));
        }
        b.finish().unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn samples_pair_images_with_captions_across_shards() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        shard(
            &dir.path().join("test-000001.tar"),
            &[("c.txt", b"third"), ("c.png", b"PNG3")],
        );
        shard(
            &dir.path().join("test-000000.tar"),
            &[
                ("s/a.jpg", b"JPEG-A"),
                ("s/a.txt", b" a dog runs \n"),
                ("s/b.jpg", b"JPEG-BB"),
                ("s/b.cls", b"7"),
            ],
        );
        let list = index(&shards(dir.path()).unwrap_or_default()).unwrap_or_default();
        let seen: Vec<(Option<&str>, &str)> = list
            .iter()
            .map(|i| (i.caption.as_deref(), i.mime))
            .collect();
        assert_eq!(
            seen,
            vec![
                (Some("a dog runs"), "image/jpeg"),
                (None, "image/jpeg"),
                (Some("third"), "image/png"),
            ]
        );
        assert_eq!(read(&list[1]).ok(), Some(b"JPEG-BB".to_vec()));
        assert_eq!(read(&list[2]).ok(), Some(b"PNG3".to_vec()));
    }
}
