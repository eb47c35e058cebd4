import Crypto
import Foundation
import PKCS11
import PaywardenStorage

/// Envelope encryption: each payload sealed with AES-256-GCM under a fresh data key in software,
/// the data key wrapped by a key-encrypting key that never leaves the HSM. Only the wrapped data
/// key, the ciphertext, the key-encrypting key's id and the format version reach the database.
struct EnvelopeSealer: Sendable {
    let hsm: HSM

    /// The formats this build opens (``SealContext/additionalData(version:)``); it seals in the one
    /// its context asks for.
    static let readableVersions = 1...2

    func seal(_ plaintext: [UInt8], under key: VaultKey, context: SealContext) async throws(VaultError) -> SealedPayload {
        let dataKey = SymmetricKey(size: .bits256)
        let version = context.format
        let ciphertext: [UInt8]
        do {
            let box = try AES.GCM.seal(plaintext, using: dataKey, authenticating: context.additionalData(version: version))
            guard let combined = box.combined else { throw VaultError(.hsmUnavailable, "AES-GCM produced no combined form") }
            ciphertext = Array(combined)
        } catch let error as VaultError {
            throw error
        } catch {
            throw VaultError(.hsmUnavailable, "the payload could not be sealed: \(error)")
        }
        let wrapped = try await wrap(dataKey.withUnsafeBytes { Array($0) }, under: key)
        return SealedPayload(
            keyID: key.id.hex, wrapPath: wrapped.path.rawValue, wrappedKey: wrapped.bytes, ciphertext: ciphertext, version: version)
    }

    func open(_ sealed: SealedPayload, with key: VaultKey, context: SealContext) async throws(VaultError) -> [UInt8] {
        let dataKey = try await unwrap(sealed, with: key)
        do {
            let box = try AES.GCM.SealedBox(combined: sealed.ciphertext)
            return Array(
                try AES.GCM.open(box, using: SymmetricKey(data: dataKey), authenticating: context.additionalData(version: sealed.version)))
        } catch {
            // The data key opened but the ciphertext did not: it was altered or moved from another row.
            throw VaultError(.recordUnreadable, "a sealed record does not open under its own context (altered or moved between rows)")
        }
    }

    /// The same ciphertext with its data key wrapped by `key` instead.
    func rewrap(_ sealed: SealedPayload, from old: VaultKey, to key: VaultKey) async throws(VaultError) -> SealedPayload {
        let dataKey = try await unwrap(sealed, with: old)
        let wrapped = try await wrap(dataKey, under: key)
        return SealedPayload(
            keyID: key.id.hex, wrapPath: wrapped.path.rawValue, wrappedKey: wrapped.bytes, ciphertext: sealed.ciphertext,
            version: sealed.version)
    }

    private func wrap(_ dataKey: [UInt8], under key: VaultKey) async throws(VaultError) -> WrappedDataKey {
        do {
            return try await hsm.wrapDataKey(key.id, dataKey: dataKey)
        } catch {
            throw .hsm(error, "the HSM could not wrap a data key under \(key.purpose.rawValue) key \(key.id.hex)")
        }
    }

    private func unwrap(_ sealed: SealedPayload, with key: VaultKey) async throws(VaultError) -> [UInt8] {
        guard Self.readableVersions.contains(sealed.version), let path = DataKeyWrapPath(rawValue: sealed.wrapPath) else {
            throw VaultError(
                .recordUnreadable, "a sealed record has format \(sealed.version) on \(sealed.wrapPath), which this build cannot read")
        }
        do {
            return try await hsm.unwrapDataKey(key.id, wrapped: WrappedDataKey(path: path, bytes: sealed.wrappedKey))
        } catch  where error.category == .badInput {
            // The HSM refused the wrapped key itself (altered, or wrapped under another key): no retry helps.
            throw VaultError(.recordUnreadable, "a sealed record's data key does not unwrap under its own key (altered or moved)")
        } catch {
            throw .hsm(error, "the HSM could not unwrap a data key with \(key.purpose.rawValue) key \(key.id.hex)")
        }
    }
}
