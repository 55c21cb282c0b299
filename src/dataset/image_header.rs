//! An image file's header read before it is sent: a PNG's signature, `IHDR` and `IEND`
//! (through the `png` crate), a JPEG's markers up to its frame header, a GIF's logical
//! screen, a WebP's RIFF header — so a corrupt or truncated file (or a text saved as
//! `.png`) is an error naming it before any request, not a request the server refuses.
//! The pixels are not decoded. Knows nothing about datasets or HTTP.

/// The width and height an image's header gives, or what is wrong with it.
pub fn probe(bytes: &[u8], mime: &str) -> Result<(u32, u32), String> {
    let dims = match mime {
        "image/png" => png_header(bytes)?,
        "image/jpeg" => jpeg_header(bytes)?,
        "image/gif" => gif_header(bytes)?,
        "image/webp" => webp_header(bytes)?,
        _ => return Ok((0, 0)),
    };
    match dims {
        (0, _) | (_, 0) => Err(format!("its header gives a size of {}x{}", dims.0, dims.1)),
        dims => Ok(dims),
    }
}

fn png_header(bytes: &[u8]) -> Result<(u32, u32), String> {
    let decoder = png::Decoder::new(std::io::Cursor::new(bytes));
    let reader = decoder
        .read_info()
        .map_err(|e| format!("not a PNG image ({e})"))?;
    let info = reader.info();
    let dims = (info.width, info.height);
    // The last chunk of a whole PNG is `IEND` (length 0, then its CRC).
    let end = bytes.len().saturating_sub(8);
    if bytes.len() < 12 || &bytes[end..end + 4] != b"IEND" {
        return Err("a PNG image cut short (it does not end with its IEND chunk)".into());
    }
    Ok(dims)
}

/// The frame header of a JPEG: SOI, then marker segments up to a SOFn.
fn jpeg_header(bytes: &[u8]) -> Result<(u32, u32), String> {
    if !bytes.starts_with(&[0xFF, 0xD8]) {
        return Err("not a JPEG image (no start-of-image marker)".into());
    }
    let mut at = 2;
    loop {
        let marker = match bytes.get(at..at + 2) {
            Some([0xFF, m]) => *m,
            Some(_) => return Err(format!("a JPEG image with no marker at byte {at}")),
            None => return Err("a JPEG image cut short before its frame header".into()),
        };
        if marker == 0xFF {
            at += 1; // fill byte
            continue;
        }
        let len = bytes
            .get(at + 2..at + 4)
            .map(|l| usize::from(u16::from_be_bytes([l[0], l[1]])))
            .ok_or("a JPEG image cut short in a marker segment")?;
        let is_frame = matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC);
        if is_frame {
            let f = bytes
                .get(at + 4..at + 9)
                .ok_or("a JPEG image cut short in its frame header")?;
            let height = u32::from(u16::from_be_bytes([f[1], f[2]]));
            let width = u32::from(u16::from_be_bytes([f[3], f[4]]));
            return Ok((width, height));
        }
        if marker == 0xDA || len < 2 {
            return Err("a JPEG image without a frame header".into());
        }
        at += 2 + len;
    }
}

fn gif_header(bytes: &[u8]) -> Result<(u32, u32), String> {
    if !(bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a")) || bytes.len() < 10 {
        return Err("not a GIF image".into());
    }
    let w = u32::from(u16::from_le_bytes([bytes[6], bytes[7]]));
    let h = u32::from(u16::from_le_bytes([bytes[8], bytes[9]]));
    Ok((w, h))
}

fn webp_header(bytes: &[u8]) -> Result<(u32, u32), String> {
    if bytes.len() < 16 || &bytes[0..4] != b"RIFF" || &bytes[8..12] != b"WEBP" {
        return Err("not a WebP image".into());
    }
    let size = u32::from_le_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
    if size + 8 > bytes.len() {
        return Err("a WebP image cut short (its RIFF size is larger than the file)".into());
    }
    // The size is in the chunk's own header; a non-zero pair stands for "some image".
    Ok((1, 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::image_codec::{encode, pixels, ImageFormat};

    #[test]
    fn whole_images_read_and_broken_ones_are_named() {
        let png = encode(ImageFormat::Png, 7, 5, &pixels(7, 5, 1)).unwrap();
        assert_eq!(probe(&png, "image/png"), Ok((7, 5)));
        let jpeg = encode(ImageFormat::Jpeg, 9, 4, &pixels(9, 4, 2)).unwrap();
        assert_eq!(probe(&jpeg, "image/jpeg"), Ok((9, 4)));
        let cut = &png[..png.len() - 20];
        assert!(probe(cut, "image/png").unwrap_err().contains("cut short"));
        assert!(probe(b"hello", "image/png")
            .unwrap_err()
            .contains("not a PNG"));
        assert!(probe(&jpeg[..20], "image/jpeg").is_err());
        assert!(probe(b"\xff\xd8\xff\xe0fake", "image/jpeg").is_err());
        assert!(probe(b"GIF89a\x02\x00\x03\x00", "image/gif").is_ok());
        assert!(probe(b"GIF89a\x00\x00\x03\x00", "image/gif").is_err());
    }
}
