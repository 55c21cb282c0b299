//! `random_images` and `images`: chat prompts of one user message holding a text part and
//! `images_per_request` `image_url` parts with base64 data URLs. Random images are drawn
//! from the run seed (one per request and position); `images` reads a folder (png, jpg,
//! jpeg files in name order, grouped by `images_per_request`; or WebDataset `.tar` shards,
//! each image with its `.txt` caption, see `tar_shards`) or a JSONL file of
//! `{"image": path, "text": ...}` records (`image_path`/`path`, `prompt` also read).
//! The dataset's `text`, when set, is sent instead of every caption.
//! The client counts only the text; visual tokens come from the server's usage.

use std::path::{Path, PathBuf};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::embedding::{done, item};
use super::image_codec::{data_url, encode, pixels, ImageFormat};
use super::source::{json_line, numbered_lines, read_text, resolve, LineError};
use super::words::{draw_len, random_text};
use super::{DatasetContext, DatasetError, Materialized};
use crate::api::Prompt;
use crate::plan::spec::TokenRange;

const DEFAULT_TEXT: &str = "Describe this image.";

/// One chat message: the text part, then one `image_url` part per URL.
pub(crate) fn image_message(text: &str, urls: &[String]) -> Value {
    let mut parts = vec![json!({"type": "text", "text": text})];
    parts.extend(
        urls.iter()
            .map(|u| json!({"type": "image_url", "image_url": {"url": u}})),
    );
    json!({"role": "user", "content": parts})
}

/// What both image kinds take: images per request and the text part's length.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Captions {
    pub images_per_request: u32,
    /// Unset: a fixed caption.
    pub text_tokens: Option<TokenRange>,
}

impl Captions {
    fn per_request(self) -> usize {
        self.images_per_request.max(1) as usize
    }
}

fn caption(
    captions: Captions,
    ctx: &DatasetContext,
    rng: &mut ChaCha8Rng,
) -> Result<(String, Option<u32>), DatasetError> {
    match captions.text_tokens.map(|r| draw_len(r, rng)) {
        Some(n) if n > 0 => random_text(ctx.tokenizer.as_deref(), n, rng),
        _ => Ok((DEFAULT_TEXT.to_string(), count(ctx, DEFAULT_TEXT)?)),
    }
}

fn count(ctx: &DatasetContext, text: &str) -> Result<Option<u32>, DatasetError> {
    match ctx.tokenizer.as_deref() {
        Some(t) => Ok(Some(t.count(text, false)? as u32)),
        None => Ok(None),
    }
}

/// Generated `width` × `height` images in `format`, with their captions.
pub(crate) fn random(
    (width, height): (u32, u32),
    format: &str,
    captions: Captions,
    ctx: &DatasetContext,
) -> Result<Materialized, DatasetError> {
    let pixels_at_most = crate::plan::ranges::MAX_IMAGE_PIXELS;
    if width == 0 || height == 0 || u64::from(width) * u64::from(height) > pixels_at_most {
        return Err(DatasetError::Invalid(format!(
            "image size {width}x{height} must be between 1x1 and 16 megapixels"
        )));
    }
    let format = image_format(format)?;
    let n = captions.per_request();
    let mut items = Vec::with_capacity(ctx.count);
    for i in ctx.range() {
        let mut rng = ChaCha8Rng::seed_from_u64(ctx.seed ^ (i as u64).wrapping_mul(0x2545_f491));
        let (text, tokens) = caption(captions, ctx, &mut rng)?;
        let mut urls = Vec::with_capacity(n);
        for j in 0..n {
            let seed = ctx.seed ^ ((i * n + j) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            let bytes = encode(format, width, height, &pixels(width, height, seed))
                .map_err(DatasetError::Invalid)?;
            urls.push(data_url(format.mime(), &bytes));
        }
        items.push(item(
            Prompt::Messages(vec![image_message(&text, &urls)]),
            tokens,
        ));
    }
    Ok(done(items))
}

fn image_format(text: &str) -> Result<ImageFormat, DatasetError> {
    ImageFormat::parse(text).ok_or_else(|| {
        DatasetError::Invalid(format!("image format `{text}` is not one of png, jpeg"))
    })
}

fn mime_of(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "webp" => Some("image/webp"),
        "gif" => Some("image/gif"),
        _ => None,
    }
}

/// An image file's bytes and type, its header checked (`image_header`).
fn image_bytes(path: &Path) -> Result<(&'static str, Vec<u8>), DatasetError> {
    let mime = mime_of(path).ok_or_else(|| {
        DatasetError::Invalid(format!(
            "{}: not an image file (png, jpg, jpeg, webp, gif)",
            path.display()
        ))
    })?;
    let bytes = std::fs::read(path).map_err(|source| DatasetError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    super::image_header::probe(&bytes, mime).map_err(|why| {
        DatasetError::Invalid(format!("{}: a corrupt image: {why}", path.display()))
    })?;
    Ok((mime, bytes))
}

/// Where an image's bytes are.
pub(crate) enum ImageSource {
    File(PathBuf),
    Shard(super::tar_shards::ShardImage),
}

impl ImageSource {
    /// The image's bytes, its header checked: an error names the file (or the shard and
    /// the member).
    pub(crate) fn checked(&self) -> Result<(&'static str, Vec<u8>), DatasetError> {
        match self {
            ImageSource::File(p) => image_bytes(p),
            ImageSource::Shard(image) => {
                let bytes = super::tar_shards::read(image)?;
                super::image_header::probe(&bytes, image.mime).map_err(|why| {
                    DatasetError::Invalid(format!(
                        "{} (member {}): a corrupt image: {why}",
                        image.shard.display(),
                        image.name
                    ))
                })?;
                Ok((image.mime, bytes))
            }
        }
    }
}

fn read_source(source: &ImageSource) -> Result<String, DatasetError> {
    let (mime, bytes) = source.checked()?;
    Ok(data_url(mime, &bytes))
}

/// The lines of a file that are not usable, with why.
pub(crate) type BadLines = Vec<(usize, LineError)>;

/// One entry of an image set: its caption, its image, and the line of the JSONL file
/// that names it.
pub(crate) struct ImageEntry {
    pub line: Option<usize>,
    pub text: Option<String>,
    pub source: ImageSource,
}

/// `(text or None, image)` per request source entry.
fn entries(path: &Path) -> Result<Vec<(Option<String>, ImageSource)>, DatasetError> {
    let (list, bad) = entries_all(path)?;
    if let Some((line, e)) = bad.into_iter().next() {
        return Err(e.at(path, line));
    }
    Ok(list.into_iter().map(|e| (e.text, e.source)).collect())
}

/// Every entry of the image set at `path` (a folder of images or of tar shards, or a
/// JSONL file), and every line of a JSONL file that names no image.
pub(crate) fn entries_all(path: &Path) -> Result<(Vec<ImageEntry>, BadLines), DatasetError> {
    let unlined = |list: Vec<(Option<String>, ImageSource)>| {
        let list = list
            .into_iter()
            .map(|(text, source)| ImageEntry {
                line: None,
                text,
                source,
            })
            .collect();
        (list, Vec::new())
    };
    if path.is_dir() {
        return folder(path).map(unlined);
    }
    let text = read_text(path)?;
    let base = path.parent().unwrap_or(Path::new("."));
    let (mut out, mut bad) = (Vec::new(), Vec::new());
    for (line, raw) in numbered_lines(&text) {
        match image_line(raw, base) {
            Ok((text, file)) => out.push(ImageEntry {
                line: Some(line),
                text,
                source: ImageSource::File(file),
            }),
            Err(e) => bad.push((line, e)),
        }
    }
    Ok((out, bad))
}

/// One line of an images JSONL file: its caption and its image's path.
fn image_line(raw: &str, base: &Path) -> Result<(Option<String>, PathBuf), LineError> {
    let v = json_line(raw)?;
    let image = ["image", "image_path", "path"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .ok_or("no `image` path")?;
    let p = Path::new(image);
    let full = if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    };
    let text = ["text", "prompt"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
        .map(String::from);
    Ok((text, full))
}

/// The images of a folder: its tar shards' samples, or its image files in name order.
fn folder(path: &Path) -> Result<Vec<(Option<String>, ImageSource)>, DatasetError> {
    let shards = super::tar_shards::shards(path)?;
    if !shards.is_empty() {
        let images = super::tar_shards::index(&shards)?;
        return Ok(images
            .into_iter()
            .map(|i| (i.caption.clone(), ImageSource::Shard(i)))
            .collect());
    }
    let read = std::fs::read_dir(path).map_err(|source| DatasetError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let mut files: Vec<PathBuf> = read
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| mime_of(p).is_some())
        .collect();
    files.sort();
    Ok(files
        .into_iter()
        .map(|p| (None, ImageSource::File(p)))
        .collect())
}

/// The images at `path` with their captions (or `text` instead of every caption).
pub(crate) fn files(
    path: &str,
    text: Option<&str>,
    captions: Captions,
    ctx: &DatasetContext,
) -> Result<Materialized, DatasetError> {
    let path = resolve(ctx, path);
    let fixed_text = text;
    let list = entries(&path)?;
    if list.is_empty() {
        return Err(DatasetError::Empty { path });
    }
    let n = captions.per_request();
    let mut items = Vec::with_capacity(ctx.count);
    for i in ctx.range() {
        let mut rng = ChaCha8Rng::seed_from_u64(ctx.seed ^ i as u64);
        let mut urls = Vec::with_capacity(n);
        let mut text = fixed_text.map(String::from);
        for j in 0..n {
            let (t, p) = &list[(i * n + j) % list.len()];
            text = text.or(t.clone());
            urls.push(read_source(p)?);
        }
        let (text, tokens) = match text {
            Some(t) => {
                let c = count(ctx, &t)?;
                (t, c)
            }
            None => caption(captions, ctx, &mut rng)?,
        };
        items.push(item(
            Prompt::Messages(vec![image_message(&text, &urls)]),
            tokens,
        ));
    }
    let mut out = done(items);
    out.stats.source_prompts = list.len();
    if ctx.end() * n > list.len() {
        out.warnings.push(format!(
            "{} holds {} images; the run sends {}: images repeat",
            path.display(),
            list.len(),
            ctx.end() * n
        ));
    }
    Ok(out)
}
