import CPKCS11

/// Session copies of token keys.
///
/// SoftHSM re-reads a token object's files (open, lock, read, close) on every use, which costs
/// more than a third of an ECDH derive. A copy made with `C_CopyObject` and `CKA_TOKEN=FALSE`
/// lives only in this session, inside the HSM, with the same protection: it is sensitive, not
/// extractable and private, which is checked on every copy. It dies when the session closes
/// (every module recycle ends all of them).
extension Session {
    /// The handle of this session's copy of the token key `key`, made on first use.
    func keyCopy(of key: CK_OBJECT_HANDLE) throws(PKCS11Error) -> CK_OBJECT_HANDLE {
        if let copy = keyCopies[key] { return copy }
        // Only CKA_TOKEN may change (SoftHSM refuses even a no-op on the others); the rest is
        // inherited, and checked below.
        let copy = try copyObject(key, [.bool(.token, false)])
        let protection = try attributes(of: copy, [.token, .sensitive, .extractable, .private])
        guard !Self.bool(protection[.token]), Self.bool(protection[.sensitive]),
              !Self.bool(protection[.extractable]), Self.bool(protection[.private])
        else {
            try? destroyObject(copy)
            throw PKCS11Error(code: .unsupportedKey, category: .misconfiguration, function: "C_CopyObject",
                              message: "the token made a key copy that is not a private, sensitive, non-extractable session object; set PAYWARDEN_HSM_SESSION_KEY_COPIES=off")
        }
        keyCopies[key] = copy
        return copy
    }

    /// Forgets the copy of `key` after the token called its handle invalid.
    func forgetKeyCopy(of key: CK_OBJECT_HANDLE) {
        keyCopies.removeValue(forKey: key)
    }

    func copyObject(_ object: CK_OBJECT_HANDLE, _ attributes: [Attribute]) throws(PKCS11Error) -> CK_OBJECT_HANDLE {
        var copy: CK_OBJECT_HANDLE = 0
        try withTemplate(attributes) { (template, count) throws(PKCS11Error) in
            try check("C_CopyObject", module.functions.pointee.C_CopyObject(handle, object, template, count, &copy))
        }
        return copy
    }
}
