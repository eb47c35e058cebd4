import CPKCS11

/// A handle to an object in the token (`CK_OBJECT_HANDLE`), valid in the module generation that
/// returned it: tokens renumber objects after `C_Initialize`, and a handle must never outlive a
/// recycle. The raw value stays inside this module.
public struct ObjectHandle: Hashable, Sendable, CustomStringConvertible {
    let rawValue: CK_OBJECT_HANDLE

    init(_ rawValue: CK_OBJECT_HANDLE) {
        self.rawValue = rawValue
    }

    public var description: String { "object \(rawValue)" }
}

/// A session handle (`CK_SESSION_HANDLE`), for logs and diagnostics; only ``Session`` uses it.
public struct SessionHandle: Hashable, Sendable, CustomStringConvertible {
    let rawValue: CK_SESSION_HANDLE

    init(_ rawValue: CK_SESSION_HANDLE) {
        self.rawValue = rawValue
    }

    public var description: String { "session \(rawValue)" }
}

/// A slot (`CK_SLOT_ID`). Slot ids move when tokens are added, so tokens are found by label.
public struct SlotID: Hashable, Sendable, CustomStringConvertible {
    let rawValue: CK_SLOT_ID

    init(_ rawValue: CK_SLOT_ID) {
        self.rawValue = rawValue
    }

    public var description: String { "slot \(rawValue)" }
}
