//! Deterministic test images and their encodings: a minimal PNG encoder (RGB, 8 bits,
//! uncompressed deflate blocks, CRC-32 and Adler-32 written here) and JPEG through
//! `jpeg-encoder`; base64 data URLs. Knows nothing about datasets or HTTP.

use base64::Engine as _;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// An image file format perfplan can generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    Png,
    Jpeg,
}

impl ImageFormat {
    pub fn parse(text: &str) -> Option<ImageFormat> {
        match text.to_ascii_lowercase().as_str() {
            "png" => Some(ImageFormat::Png),
            "jpeg" | "jpg" => Some(ImageFormat::Jpeg),
            _ => None,
        }
    }

    pub fn mime(self) -> &'static str {
        match self {
            ImageFormat::Png => "image/png",
            ImageFormat::Jpeg => "image/jpeg",
        }
    }
}

/// `width × height` RGB pixels drawn from `seed`: a gradient under random coloured tiles,
/// so that images differ per seed and compress like pictures rather than noise.
pub fn pixels(width: u32, height: u32, seed: u64) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let tile = 16u32;
    let tiles_x = width.div_ceil(tile) as usize;
    let tiles_y = height.div_ceil(tile) as usize;
    let colours: Vec<[u8; 3]> = (0..tiles_x * tiles_y).map(|_| rng.gen()).collect();
    let mut out = Vec::with_capacity(width as usize * height as usize * 3);
    for y in 0..height {
        for x in 0..width {
            let c = colours[(y / tile) as usize * tiles_x + (x / tile) as usize];
            let g = ((x * 255) / width.max(1)) as u8;
            let h = ((y * 255) / height.max(1)) as u8;
            out.extend_from_slice(&[c[0] / 2 + g / 2, c[1] / 2 + h / 2, c[2]]);
        }
    }
    out
}

/// Encodes RGB pixels.
pub fn encode(format: ImageFormat, width: u32, height: u32, rgb: &[u8]) -> Result<Vec<u8>, String> {
    match format {
        ImageFormat::Png => Ok(png(width, height, rgb)),
        ImageFormat::Jpeg => {
            let (w, h) = match (u16::try_from(width), u16::try_from(height)) {
                (Ok(w), Ok(h)) => (w, h),
                _ => return Err(format!("{width}x{height} is too large for JPEG")),
            };
            let mut out = Vec::new();
            let encoder = jpeg_encoder::Encoder::new(&mut out, 85);
            encoder
                .encode(rgb, w, h, jpeg_encoder::ColorType::Rgb)
                .map_err(|e| e.to_string())?;
            Ok(out)
        }
    }
}

/// `data:<mime>;base64,<bytes>`.
pub fn data_url(mime: &str, bytes: &[u8]) -> String {
    let mut url = format!("data:{mime};base64,");
    base64::engine::general_purpose::STANDARD.encode_string(bytes, &mut url);
    url
}

/// A PNG file: signature, IHDR, one IDAT of stored deflate blocks, IEND.
pub fn png(width: u32, height: u32, rgb: &[u8]) -> Vec<u8> {
    let row = width as usize * 3;
    let mut raw = Vec::with_capacity((row + 1) * height as usize);
    for y in 0..height as usize {
        raw.push(0); // filter: none
        raw.extend_from_slice(&rgb[y * row..(y + 1) * row]);
    }
    let mut zlib = vec![0x78, 0x01];
    let mut blocks = raw.chunks(65_535).peekable();
    if blocks.peek().is_none() {
        zlib.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(block) = blocks.next() {
        zlib.push(u8::from(blocks.peek().is_none()));
        let len = block.len() as u16;
        zlib.extend_from_slice(&len.to_le_bytes());
        zlib.extend_from_slice(&(!len).to_le_bytes());
        zlib.extend_from_slice(block);
    }
    zlib.extend_from_slice(&adler32(&raw).to_be_bytes());
    let mut ihdr = Vec::with_capacity(13);
    ihdr.extend_from_slice(&width.to_be_bytes());
    ihdr.extend_from_slice(&height.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut out = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
    chunk(&mut out, b"IHDR", &ihdr);
    chunk(&mut out, b"IDAT", &zlib);
    chunk(&mut out, b"IEND", &[]);
    out
}

fn chunk(out: &mut Vec<u8>, kind: &[u8; 4], data: &[u8]) {
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    out.extend_from_slice(data);
    let crc = crc32(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn adler32(data: &[u8]) -> u32 {
    let (mut a, mut b) = (1u32, 0u32);
    for chunk in data.chunks(5552) {
        for &x in chunk {
            a += u32::from(x);
            b += a;
        }
        a %= 65_521;
        b %= 65_521;
    }
    (b << 16) | a
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn checksums_match_known_values() {
        assert_eq!(crc32(b"123456789"), 0xcbf4_3926);
        assert_eq!(adler32(b"Wikipedia"), 0x11e6_0398);
    }

    #[test]
    fn png_decodes_to_the_same_pixels() {
        let rgb = pixels(37, 21, 5);
        let bytes = png(37, 21, &rgb);
        let decoder = ::png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (37, 21));
        assert_eq!(&buf[..info.buffer_size()], &rgb[..]);
    }

    #[test]
    fn large_png_spans_several_blocks_and_jpeg_has_its_size() {
        let rgb = pixels(300, 300, 1);
        let bytes = png(300, 300, &rgb);
        let mut reader = ::png::Decoder::new(std::io::Cursor::new(bytes))
            .read_info()
            .unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        reader.next_frame(&mut buf).unwrap();
        assert_eq!(buf, rgb);
        let jpeg = encode(ImageFormat::Jpeg, 64, 48, &pixels(64, 48, 2)).unwrap();
        let mut d = jpeg_decoder::Decoder::new(&jpeg[..]);
        d.decode().unwrap();
        let info = d.info().unwrap();
        assert_eq!((info.width, info.height), (64, 48));
    }
}
