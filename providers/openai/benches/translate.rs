// Placeholder until the suite lands (work in progress).
fn main() {}
