//! Deterministic test images and their encodings: PNG through the `png` crate, JPEG
//! through `jpeg-encoder`; base64 data URLs. Knows nothing about datasets or HTTP.

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
        ImageFormat::Png => png(width, height, rgb),
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
pub(crate) fn data_url(mime: &str, bytes: &[u8]) -> String {
    let mut url = format!("data:{mime};base64,");
    base64::engine::general_purpose::STANDARD.encode_string(bytes, &mut url);
    url
}

/// A PNG file of RGB pixels (8 bits per channel), deflated by the `png` crate at its fast
/// setting: the same pixels give the same bytes (for the `png` version in `Cargo.lock`).
fn png(width: u32, height: u32, rgb: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut encoder = ::png::Encoder::new(&mut out, width, height);
    encoder.set_color(::png::ColorType::Rgb);
    encoder.set_depth(::png::BitDepth::Eight);
    encoder.set_compression(::png::Compression::Fast);
    let failed = |e: ::png::EncodingError| format!("png encoding of a {width}x{height} image: {e}");
    let mut writer = encoder.write_header().map_err(failed)?;
    writer.write_image_data(rgb).map_err(failed)?;
    writer.finish().map_err(failed)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn png_decodes_to_the_same_pixels() {
        let rgb = pixels(37, 21, 5);
        let bytes = png(37, 21, &rgb).unwrap();
        let decoder = ::png::Decoder::new(std::io::Cursor::new(bytes));
        let mut reader = decoder.read_info().unwrap();
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).unwrap();
        assert_eq!((info.width, info.height), (37, 21));
        assert_eq!(&buf[..info.buffer_size()], &rgb[..]);
    }

    #[test]
    fn the_same_seed_gives_the_same_bytes() {
        let a = encode(ImageFormat::Png, 64, 48, &pixels(64, 48, 7)).unwrap();
        assert_eq!(
            a,
            encode(ImageFormat::Png, 64, 48, &pixels(64, 48, 7)).unwrap()
        );
        assert_ne!(
            a,
            encode(ImageFormat::Png, 64, 48, &pixels(64, 48, 8)).unwrap()
        );
        // Deflated: the tiles and gradient take far less than the raw pixels.
        assert!(a.len() < 64 * 48 * 3 / 2, "{} bytes", a.len());
        assert!(
            encode(ImageFormat::Png, 4, 4, &[0; 5]).is_err(),
            "too few pixels"
        );
    }

    #[test]
    fn an_empty_image_is_an_error_naming_its_size() {
        let e = encode(ImageFormat::Png, 0, 4, &[]).unwrap_err();
        assert!(e.starts_with("png encoding of a 0x4 image: "), "{e}");
    }

    #[test]
    fn large_png_and_jpeg_decode_to_their_size() {
        let rgb = pixels(300, 300, 1);
        let bytes = png(300, 300, &rgb).unwrap();
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
