import Foundation

/// Typed, bounded access to one decoded JSON object: every field is checked for type and
/// length, and `null` counts as absent.
struct JSONFields {
    private let object: [String: Any]
    /// Where this object is in the body ("" for the top level), for messages.
    let path: String

    init(_ object: [String: Any], path: String) {
        self.object = object
        self.path = path
    }

    private func name(_ key: String) -> String {
        path.isEmpty ? key : "\(path).\(key)"
    }

    private func invalid(_ key: String, _ why: String) -> AppleGatewayError {
        AppleGatewayError(.responseInvalid, "Apple's event details: \(name(key)) \(why)")
    }

    private func value(_ key: String) -> Any? {
        guard let value = object[key], !(value is NSNull) else { return nil }
        return value
    }

    /// A string of at most `maximum` characters.
    func string(_ key: String, maximum: Int, required: Bool = false) throws(AppleGatewayError) -> String? {
        guard let value = value(key) else {
            if required { throw invalid(key, "is missing") }
            return nil
        }
        guard let string = value as? String else { throw invalid(key, "is not a string") }
        guard string.count <= maximum else { throw invalid(key, "is longer than \(maximum) characters") }
        if required && string.isEmpty { throw invalid(key, "is empty") }
        return string
    }

    func object(_ key: String) throws(AppleGatewayError) -> JSONFields? {
        guard let value = value(key) else { return nil }
        guard let nested = value as? [String: Any] else { throw invalid(key, "is not an object") }
        return JSONFields(nested, path: name(key))
    }

    /// An array of at most `maximum` objects.
    func array(_ key: String, maximum: Int) throws(AppleGatewayError) -> [JSONFields]? {
        guard let value = value(key) else { return nil }
        guard let array = value as? [Any] else { throw invalid(key, "is not an array") }
        guard array.count <= maximum else { throw invalid(key, "has more than \(maximum) entries") }
        var result: [JSONFields] = []
        for (index, element) in array.enumerated() {
            guard let nested = element as? [String: Any] else { throw invalid("\(key)[\(index)]", "is not an object") }
            result.append(JSONFields(nested, path: name("\(key)[\(index)]")))
        }
        return result
    }
}
