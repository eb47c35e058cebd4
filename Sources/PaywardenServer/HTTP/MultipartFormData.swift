import Foundation

/// `multipart/form-data` (RFC 7578), strictly: every part has a `Content-Disposition: form-data`
/// with a quoted `name` (and optionally `filename`); anything else, a missing boundary or a body
/// that does not end with the closing delimiter is refused with the reason.
struct MultipartFormData {
    struct Part {
        let name: String
        let filename: String?
        let body: [UInt8]
    }

    struct Malformed: Error {
        let reason: String
    }

    let parts: [Part]

    /// The boundary of a `multipart/form-data; boundary=…` content type, or nil for another type.
    static func boundary(contentType: String) -> String? {
        let pieces = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard pieces.first?.lowercased() == "multipart/form-data" else { return nil }
        for piece in pieces.dropFirst() where piece.lowercased().hasPrefix("boundary=") {
            var value = String(piece.dropFirst("boundary=".count))
            if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") { value = String(value.dropFirst().dropLast()) }
            return value
        }
        return ""
    }

    init(_ body: [UInt8], boundary: String) throws(Malformed) {
        guard (1...70).contains(boundary.utf8.count) else { throw Malformed(reason: "the multipart boundary is missing or too long") }
        let data = Data(body)
        let opening = Data("--\(boundary)\r\n".utf8)
        let delimiter = Data("\r\n--\(boundary)".utf8)
        guard data.starts(with: opening) else { throw Malformed(reason: "the body does not start with the multipart boundary") }
        var parts: [Part] = []
        var start = data.startIndex + opening.count
        while true {
            guard let end = data.range(of: delimiter, in: start..<data.endIndex) else {
                throw Malformed(reason: "a multipart part has no closing boundary")
            }
            parts.append(try Self.part(data[start..<end.lowerBound]))
            let after = data[end.upperBound...]
            if after.starts(with: Data("--".utf8)) { break }
            guard after.starts(with: Data("\r\n".utf8)) else { throw Malformed(reason: "a multipart boundary is not followed by CRLF") }
            start = end.upperBound + 2
        }
        self.parts = parts
    }

    private static func part(_ data: Data) throws(Malformed) -> Part {
        guard let split = data.range(of: Data("\r\n\r\n".utf8)) else { throw Malformed(reason: "a multipart part has no header end") }
        let headers = String(decoding: data[data.startIndex..<split.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        guard let disposition = headers.first(where: { $0.lowercased().hasPrefix("content-disposition:") }) else {
            throw Malformed(reason: "a multipart part has no Content-Disposition")
        }
        let fields = disposition.dropFirst("content-disposition:".count).split(separator: ";").map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard fields.first?.lowercased() == "form-data" else { throw Malformed(reason: "a multipart part is not form-data") }
        var name: String?
        var filename: String?
        for field in fields.dropFirst() {
            guard let equals = field.firstIndex(of: "=") else { continue }
            let key = field[..<equals].lowercased()
            let raw = field[field.index(after: equals)...]
            guard raw.count >= 2, raw.hasPrefix("\""), raw.hasSuffix("\"") else {
                throw Malformed(reason: "a multipart \(key) is not quoted")
            }
            let value = String(raw.dropFirst().dropLast())
            if key == "name" { name = value } else if key == "filename" { filename = value }
        }
        guard let name else { throw Malformed(reason: "a multipart part has no name") }
        return Part(name: name, filename: filename, body: Array(data[split.upperBound...]))
    }
}
