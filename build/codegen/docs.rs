pub fn convert(s: &str) -> String { s.to_string() }
