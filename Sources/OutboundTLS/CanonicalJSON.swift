import Foundation

/// JSON written the same way every time (sorted keys, no escaped slashes), so what the vault
/// and the event log record is comparable byte for byte.
enum CanonicalJSON {
    /// `value` holds only strings, numbers, booleans, arrays and dictionaries, so this cannot fail.
    static func encode(_ value: Any) -> [UInt8] {
        let data = try? JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .withoutEscapingSlashes])
        return Array(data ?? Data("null".utf8))
    }

    /// The top-level object of `bytes`, or nil when it is not a JSON object.
    static func object(_ bytes: [UInt8]) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any]
    }
}
