import CPKCS11

/// What `C_GetTokenInfo` says of a token, with the space-padded fields trimmed.
public struct TokenInfo: Sendable, Hashable {
    public let slot: SlotID
    public let label: String
    public let manufacturer: String
    public let model: String
    public let serialNumber: String
    let flags: CK_FLAGS

    init(slot: SlotID, _ info: CK_TOKEN_INFO) {
        self.slot = slot
        var info = info
        label = withUnsafeBytes(of: &info.label) { paddedString($0) }
        manufacturer = withUnsafeBytes(of: &info.manufacturerID) { paddedString($0) }
        model = withUnsafeBytes(of: &info.model) { paddedString($0) }
        serialNumber = withUnsafeBytes(of: &info.serialNumber) { paddedString($0) }
        flags = info.flags
    }

    public var isInitialized: Bool { flags & CPKCS11_CKF_TOKEN_INITIALIZED != 0 }
    public var isUserPINInitialized: Bool { flags & CPKCS11_CKF_USER_PIN_INITIALIZED != 0 }
}

/// What `C_GetInfo` says of a module.
public struct ModuleInfo: Sendable, Hashable {
    public let cryptokiVersion: String
    public let manufacturer: String
    public let libraryDescription: String
    public let libraryVersion: String

    init(_ info: CK_INFO) {
        var info = info
        cryptokiVersion = "\(info.cryptokiVersion.major).\(info.cryptokiVersion.minor)"
        libraryVersion = "\(info.libraryVersion.major).\(info.libraryVersion.minor)"
        manufacturer = withUnsafeBytes(of: &info.manufacturerID) { paddedString($0) }
        libraryDescription = withUnsafeBytes(of: &info.libraryDescription) { paddedString($0) }
    }
}

/// PKCS#11 text fields are fixed-length and padded with spaces, not NUL-terminated.
func paddedString(_ bytes: UnsafeRawBufferPointer) -> String {
    var text = String(decoding: bytes, as: UTF8.self)
    while let last = text.last, last == " " || last == "\0" { text.removeLast() }
    return text
}
