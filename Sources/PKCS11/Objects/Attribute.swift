import CPKCS11

/// One typed attribute of an object template, with its value already encoded as the module
/// expects it (`CK_BBOOL`, `CK_ULONG` in host order, or raw bytes).
public struct Attribute: Sendable, Hashable {
    public let type: AttributeType
    public let value: [UInt8]

    public init(_ type: AttributeType, bytes: [UInt8]) {
        self.type = type
        self.value = bytes
    }

    public static func bool(_ type: AttributeType, _ value: Bool) -> Attribute {
        Attribute(type, bytes: [value ? UInt8(CK_TRUE) : UInt8(CK_FALSE)])
    }

    public static func ulong(_ type: AttributeType, _ value: UInt) -> Attribute {
        Attribute(type, bytes: withUnsafeBytes(of: value) { Array($0) })
    }

    public static func string(_ type: AttributeType, _ value: String) -> Attribute {
        Attribute(type, bytes: Array(value.utf8))
    }

    public static func objectClass(_ value: ObjectClass) -> Attribute { .ulong(.objectClass, value.rawValue) }
    public static func keyType(_ value: KeyType) -> Attribute { .ulong(.keyType, value.rawValue) }
    public static func id(_ value: KeyIdentifier) -> Attribute { Attribute(.id, bytes: value.bytes) }
    public static func label(_ value: String) -> Attribute { .string(.label, value) }
}

/// Lays out `attributes` as a `CK_ATTRIBUTE` array whose values live in one buffer, valid for
/// the duration of `body`.
func withTemplate<R, E: Error>(
    _ attributes: [Attribute],
    _ body: (UnsafeMutablePointer<CK_ATTRIBUTE>?, CK_ULONG) throws(E) -> R
) throws(E) -> R {
    // Each value starts on an 8-byte boundary: modules read CK_ULONG and CK_BBOOL in place.
    func aligned(_ count: Int) -> Int { (count + 7) & ~7 }
    let total = attributes.reduce(0) { $0 + aligned($1.value.count) }
    let values = UnsafeMutableRawBufferPointer.allocate(byteCount: max(total, 8), alignment: 8)
    let template = UnsafeMutablePointer<CK_ATTRIBUTE>.allocate(capacity: max(attributes.count, 1))
    defer {
        // Templates may carry key components on import: wipe before freeing.
        values.initializeMemory(as: UInt8.self, repeating: 0)
        values.deallocate()
        template.deallocate()
    }
    var offset = 0
    for (index, attribute) in attributes.enumerated() {
        let slot = values.baseAddress! + offset
        attribute.value.withUnsafeBytes { bytes in
            if let source = bytes.baseAddress { slot.copyMemory(from: source, byteCount: bytes.count) }
        }
        template[index] = CK_ATTRIBUTE(
            type: attribute.type.rawValue,
            pValue: attribute.value.isEmpty ? nil : slot,
            ulValueLen: CK_ULONG(attribute.value.count)
        )
        offset += aligned(attribute.value.count)
    }
    return try body(template, CK_ULONG(attributes.count))
}
