/// A JSON object read by the strict reader the tokens use and written back canonically (members
/// sorted, no whitespace, `/` unescaped, numbers as written): how a merchant token's metadata is
/// kept, so the same metadata is always the same bytes, and how an update's sections replace it.
public struct CanonicalJSONObject: Sendable {
    let object: TokenJSON.Object

    /// Reads `json`; nil unless it is exactly one JSON object.
    public init?(json: [UInt8]) {
        guard let object = try? TokenJSON.object(json) else { return nil }
        self.object = object
    }

    init(_ object: TokenJSON.Object) {
        self.object = object
    }

    /// The object as canonical JSON.
    public var bytes: [UInt8] {
        var output: [UInt8] = []
        TokenJSON.Value.object(object).writeCanonical(to: &output)
        return output
    }

    /// `member`'s value when it is a string.
    public func string(_ member: String) -> String? {
        let name = Array(member.utf8)
        return object.members.first { $0.name == name }?.value.text
    }

    /// This object with `update`'s top-level members added, replacing those of the same name.
    public func merging(_ update: CanonicalJSONObject) -> CanonicalJSONObject {
        var merged = object
        for member in update.object.members {
            if let index = merged.members.firstIndex(where: { $0.name == member.name }) {
                merged.members[index].value = member.value
            } else {
                merged.members.append(member)
            }
        }
        return CanonicalJSONObject(merged)
    }
}
