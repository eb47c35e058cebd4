/// The text of the first `<name>…</name>` in `xml`: enough for the tests to read a reply's
/// fields without parsing it the way the code under test does.
func element(_ name: String, in xml: String) -> String? {
    guard let start = xml.range(of: "<\(name)>"), let end = xml.range(of: "</\(name)>", range: start.upperBound..<xml.endIndex)
    else { return nil }
    return String(xml[start.upperBound..<end.lowerBound])
}
