/// The text of the first `<name>…</name>` (attributes allowed) in `xml`: enough for the tests to read
/// a reply's fields without parsing it the way the code under test does.
public func element(_ name: String, in xml: String) -> String? {
    var from = xml.startIndex
    while let start = xml.range(of: "<\(name)", range: from..<xml.endIndex) {
        from = start.upperBound
        guard let next = xml[start.upperBound...].first, next == ">" || next == " " else { continue }
        guard let open = xml.range(of: ">", range: start.upperBound..<xml.endIndex),
            let end = xml.range(of: "</\(name)>", range: open.upperBound..<xml.endIndex)
        else { return nil }
        return String(xml[open.upperBound..<end.lowerBound])
    }
    return nil
}
