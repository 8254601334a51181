//! Prints what `auto` estimates and picks for each page of a raw .f32/.f64 file:
//! `cargo run --release --example auto_probe -- FILE [CHUNK_VALUES] [MIN_GAIN]`.
use miniblock::encodings::{AutoChooser, AutoOptions, EncoderOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .ok_or("usage: auto_probe FILE [CHUNK_VALUES] [MIN_GAIN]")?;
    let is_f64 = std::path::Path::new(path)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("f64"));
    let width = if is_f64 { 8 } else { 4 };
    let chunk = args.get(2).map(|s| s.parse()).transpose()?;
    let gain = args.get(3).map_or(Ok(0.0), |s| s.parse())?;
    let bytes = std::fs::read(path)?;
    let options = EncoderOptions::default().with_chunk_values(chunk)?;
    let chooser = AutoChooser::new(
        width,
        &options,
        &AutoOptions::default().with_min_gain(gain)?,
    )?;
    for (i, page) in bytes.chunks((1 << 20) / width * width).enumerate() {
        let choice = chooser.choose(page)?;
        let estimates: Vec<String> = choice
            .estimates
            .iter()
            .map(|(e, r)| format!("{e}={}", r.map_or("-".into(), |r| format!("{r:.4}"))))
            .collect();
        println!(
            "page {i}: {} (sample {} B) {}",
            choice.encoding,
            choice.sample_bytes,
            estimates.join(" ")
        );
    }
    Ok(())
}
