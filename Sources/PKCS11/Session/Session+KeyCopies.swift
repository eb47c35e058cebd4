/// Session copies of token keys.
///
/// SoftHSM re-reads a token object's files (open, lock, read, close) on every use, which costs
/// more than a third of an ECDH derive. A copy made with `C_CopyObject` and `CKA_TOKEN=FALSE`
/// lives only in this session, inside the HSM, with the same protection: it is sensitive, not
/// extractable and private, which is checked on every copy. It ends with the session (every
/// module recycle ends them all).
extension Session {
    /// What a copy is filed under: a handle alone could be reused for another key.
    struct KeyCopyName: Hashable {
        let handle: ObjectHandle
        let id: KeyIdentifier
    }

    /// The handle to use for `key` in this session: its copy, made on first use, or the token
    /// object itself when the token forbids copying it (`CKA_COPYABLE=FALSE`).
    func keyCopy(of key: KeyObject) throws(PKCS11Error) -> ObjectHandle {
        let name = KeyCopyName(handle: key.handle, id: key.id)
        if let copy = keyCopies[name] { return copy }
        let copy: ObjectHandle
        do {
            // Only CKA_TOKEN may change (SoftHSM refuses even a no-op on the others); the rest
            // is inherited, and checked below.
            copy = try copyObject(key.handle, [.bool(.token, false)])
        } catch  where error.returnValue == .actionProhibited {
            keyCopies[name] = key.handle
            return key.handle
        }
        let protection = try attributes(of: copy, [.token, .sensitive, .extractable, .private])
        guard !Self.bool(protection[.token]), Self.bool(protection[.sensitive]),
            !Self.bool(protection[.extractable]), Self.bool(protection[.private])
        else {
            try? destroyObject(copy)
            throw PKCS11Error(
                code: .unsupportedKey, category: .misconfiguration, function: "C_CopyObject",
                message:
                    "the token made a key copy that is not a private, sensitive, non-extractable session object; turn session key "
                    + "copies off"
            )
        }
        keyCopies[name] = copy
        return copy
    }

    /// Destroys the copy of `key`, after the token called a handle invalid during its use.
    func dropKeyCopy(of key: KeyObject) {
        guard let copy = keyCopies.removeValue(forKey: KeyCopyName(handle: key.handle, id: key.id)), copy != key.handle else { return }
        try? destroyObject(copy)
    }
}
