import Foundation
import PaywardenPrimitives
import PaywardenStorage

extension StorageConformance {
    private typealias C = StorageConformance

    static let replayChecks: [StorageConformance] = [
        StorageConformance(name: "replay: a transaction id is claimed once") { db in
            let id = C.transaction(1)
            try C.require(try await db.claimTransaction(id, until: C.t0 + 300, now: C.t0), "the first claim was refused")
            try C.require(!(try await db.claimTransaction(id, until: C.t0 + 400, now: C.t0 + 1)), "a second claim was granted")
            try C.require(try await db.claimTransaction(C.transaction(2), until: C.t0 + 300, now: C.t0), "another id was refused")
        },
        StorageConformance(name: "replay: an expired claim is taken over, a live one is not") { db in
            let id = C.transaction(3)
            _ = try await db.claimTransaction(id, until: C.t0 + 10, now: C.t0)
            try C.require(!(try await db.claimTransaction(id, until: C.t0 + 20, now: C.t0 + 9)), "claimed before expiry")
            try C.require(try await db.claimTransaction(id, until: C.t0 + 20, now: C.t0 + 10), "not claimed at expiry")
            try C.require(!(try await db.claimTransaction(id, until: C.t0 + 30, now: C.t0 + 19)), "the new expiry was not kept")
        },
        StorageConformance(name: "replay: a released claim can be claimed again") { db in
            let id = C.transaction(4)
            _ = try await db.claimTransaction(id, until: C.t0 + 300, now: C.t0)
            try await db.releaseTransaction(id)
            try C.require(try await db.claimTransaction(id, until: C.t0 + 300, now: C.t0), "a released id was refused")
            try await db.releaseTransaction(C.transaction(999))  // unknown: no error
        },
        StorageConformance(name: "replay: the purge deletes expired rows only, in batches") { db in
            for n in 10..<13 { _ = try await db.claimTransaction(C.transaction(n), until: C.t0 + 5, now: C.t0) }
            for n in 13..<15 { _ = try await db.claimTransaction(C.transaction(n), until: C.t0 + 500, now: C.t0) }
            try C.require(try await db.purgeExpiredTransactions(now: C.t0 + 5, limit: 2) == 2, "the first batch was not 2 rows")
            try C.require(try await db.purgeExpiredTransactions(now: C.t0 + 5, limit: 2) == 1, "the second batch was not 1 row")
            try C.require(try await db.purgeExpiredTransactions(now: C.t0 + 5, limit: 2) == 0, "live rows were purged")
            try C.require(!(try await db.claimTransaction(C.transaction(13), until: C.t0 + 9, now: C.t0 + 6)), "a live row was lost")
            let counts = try await db.rowCounts()
            try C.require(counts.first { $0.table == "replay_ledger" }?.rows == 2, "row counts: \(counts)")
        },
        StorageConformance(name: "replay: of 40 concurrent claims of one id, exactly one wins") { db in
            let id = C.transaction(20)
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for _ in 0..<40 { group.addTask { try await db.claimTransaction(id, until: C.t0 + 300, now: C.t0) } }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            try C.require(wins == 1, "\(wins) claims won")
        },
        StorageConformance(name: "replay: 600 concurrent claims of distinct ids (over two batches' worth) all win") { db in
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for n in 0..<600 {
                    let id = [UInt8](repeating: 0xC0, count: 30) + [UInt8(n / 256), UInt8(n % 256)]
                    group.addTask { try await db.claimTransaction(id, until: C.t0 + 300, now: C.t0) }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            try C.require(wins == 600, "\(wins) of 600 claims won")
        },
        StorageConformance(name: "replay: claims from cancelled tasks, and those sent with them, are answered") { db in
            let wins = try await withThrowingTaskGroup(of: Bool.self) { group in
                for n in 0..<64 {
                    let id = [UInt8](repeating: 0xD0, count: 31) + [UInt8(n)]
                    group.addTask {
                        // A request that went away while its claim was on the way to the ledger.
                        if n % 8 == 0 { withUnsafeCurrentTask { $0?.cancel() } }
                        return try await db.claimTransaction(id, until: C.t0 + 300, now: C.t0)
                    }
                }
                return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            try C.require(wins == 64, "\(wins) of 64 claims won")
        },
    ]

    static func registration(_ n: UInt8, expires: TimeInterval = 86_400) -> RegistrationRecord {
        RegistrationRecord(
            lookupKey: Array(repeating: n, count: 32), lookupKeyID: "hmac-1", organization: "org-a", paypageID: "pp\(n)", createdAt: t0,
            expiresAt: t0 + expires, sealed: sealed(n))
    }

    static let registrationChecks: [StorageConformance] = [
        StorageConformance(name: "registrations: insert, read, redeem, end") { db in
            let record = C.registration(1)
            try await db.insertRegistration(record)
            try C.require(try await db.registration(lookupKey: record.lookupKey) == record, "read back differs")
            try await C.requireError(.conflict, "a duplicate registration") { try await db.insertRegistration(record) }
            let redeemed = try await db.recordRedemption(lookupKey: record.lookupKey, now: C.t0 + 60)
            try C.require(redeemed?.redemptions == 1, "redemption not counted: \(String(describing: redeemed?.redemptions))")
            let late = try await db.recordRedemption(lookupKey: record.lookupKey, now: C.t0 + 86_400)
            try C.require(late?.redemptions == 1 && late?.isLive(at: C.t0 + 86_400) == false, "an expired registration was redeemed")
            try C.require(try await db.recordRedemption(lookupKey: [9], now: C.t0) == nil, "an unknown key was found")
            let payload = C.sealed(1).ciphertext
            try C.require(try await db.endRegistration(lookupKey: record.lookupKey, ciphertext: payload, at: C.t0 + 120), "ending failed")
            let ended = try await db.registration(lookupKey: record.lookupKey)
            try C.require(ended?.sealed == nil && ended?.endedAt == C.t0 + 120, "no tombstone: \(String(describing: ended))")
            try C.require(!(try await db.endRegistration(lookupKey: record.lookupKey, ciphertext: payload, at: C.t0 + 130)), "ended twice")
            let after = try await db.recordRedemption(lookupKey: record.lookupKey, now: C.t0 + 140)
            try C.require(after?.redemptions == 1, "an ended registration was redeemed")
        },
        StorageConformance(name: "registrations: a single-use redemption counts and ends in one step, once") { db in
            let record = C.registration(7, expires: 100)
            try await db.insertRegistration(record)
            let payload = C.sealed(7).ciphertext
            let taken = try await db.takeRegistration(lookupKey: record.lookupKey, ciphertext: payload, now: C.t0 + 10)
            try C.require(
                taken?.redemptions == 1 && taken?.sealed == nil && taken?.endedAt == C.t0 + 10, "not taken: \(String(describing: taken))")
            try C.require(try await db.registration(lookupKey: record.lookupKey) == taken, "the stored row is not the one returned")
            try C.require(
                try await db.takeRegistration(lookupKey: record.lookupKey, ciphertext: payload, now: C.t0 + 11) == nil, "taken twice")
            let expired = C.registration(8, expires: 100)
            try await db.insertRegistration(expired)
            try C.require(
                try await db.takeRegistration(lookupKey: expired.lookupKey, ciphertext: C.sealed(8).ciphertext, now: C.t0 + 100) == nil,
                "an expired one was taken")
            try C.require(try await db.registration(lookupKey: expired.lookupKey) == expired, "a refused take changed the row")
            try C.require(
                try await db.takeRegistration(lookupKey: [9], ciphertext: C.sealed(9).ciphertext, now: C.t0) == nil,
                "an unknown key was taken")
        },
        StorageConformance(name: "registrations: a replacement takes the place of a live row or a tombstone") { db in
            let record = C.registration(4, expires: 100)
            try await db.replaceRegistration(record)
            try C.require(try await db.registration(lookupKey: record.lookupKey) == record, "a replacement of nothing was not stored")
            try C.require(
                try await db.endRegistration(lookupKey: record.lookupKey, ciphertext: C.sealed(4).ciphertext, at: C.t0 + 10),
                "ending failed")
            var newer = C.registration(4, expires: 1000)
            newer.createdAt = C.t0 + 20
            newer.sealed = C.sealed(5)
            try await db.replaceRegistration(newer)
            try C.require(try await db.registration(lookupKey: record.lookupKey) == newer, "the tombstone was not replaced")
            var latest = newer
            latest.sealed = C.sealed(6)
            try await db.replaceRegistration(latest)
            try C.require(try await db.registration(lookupKey: record.lookupKey) == latest, "the live row was not replaced")
            let purge = try await db.purgeRegistrations(now: C.t0 + 999, tombstonesEndedBefore: C.t0)
            try C.require(purge.payloadsDestroyed == 0, "a replaced row kept its old expiry: \(purge)")
        },
        StorageConformance(name: "registrations: an end or a take is a compare-and-set on the payload read") { db in
            // A held cryptogram's row is replaced in place (the same look-up key, a newer payload):
            // a caller that read the older one ends and takes nothing.
            let older = C.registration(40, expires: 1000)
            try await db.replaceRegistration(older)
            var newer = older
            newer.sealed = C.sealed(41)
            try await db.replaceRegistration(newer)
            let stale = C.sealed(40).ciphertext
            try C.require(
                !(try await db.endRegistration(lookupKey: older.lookupKey, ciphertext: stale, at: C.t0 + 1)), "ended a newer payload")
            try C.require(
                try await db.takeRegistration(lookupKey: older.lookupKey, ciphertext: stale, now: C.t0 + 1) == nil, "took a newer payload")
            try C.require(try await db.registration(lookupKey: older.lookupKey) == newer, "a refused end or take changed the row")
            // A re-wrap keeps the ciphertext: the payload read is still the one there.
            try C.require(
                try await db.resealRegistration(lookupKey: newer.lookupKey, previousKeyID: "kek-1", sealed: C.sealed(41, key: "kek-2")),
                "re-seal refused")
            let taken = try await db.takeRegistration(lookupKey: newer.lookupKey, ciphertext: C.sealed(41).ciphertext, now: C.t0 + 2)
            try C.require(taken?.sealed == nil && taken?.redemptions == 1, "the payload read was not taken: \(String(describing: taken))")
        },
        StorageConformance(name: "registrations: the purge destroys expired payloads, then old tombstones") { db in
            try await db.insertRegistration(C.registration(2, expires: 100))
            try await db.insertRegistration(C.registration(3, expires: 1000))
            let first = try await db.purgeRegistrations(now: C.t0 + 100, tombstonesEndedBefore: C.t0)
            try C.require(first == RegistrationPurge(payloadsDestroyed: 1, tombstonesDeleted: 0), "first purge: \(first)")
            let tombstone = try await db.registration(lookupKey: C.registration(2).lookupKey)
            try C.require(tombstone?.sealed == nil && tombstone?.endedAt == C.t0 + 100, "no tombstone after the purge")
            try C.require(try await db.registration(lookupKey: C.registration(3).lookupKey)?.sealed != nil, "a live payload went")
            let second = try await db.purgeRegistrations(now: C.t0 + 200, tombstonesEndedBefore: C.t0 + 101)
            try C.require(second == RegistrationPurge(payloadsDestroyed: 0, tombstonesDeleted: 1), "second purge: \(second)")
            try C.require(try await db.registration(lookupKey: C.registration(2).lookupKey) == nil, "the tombstone stayed")
        },
    ]

    static func token(_ value: String, fingerprint: UInt8, organization: OrganizationID = "org-a", merchantToken: String? = nil)
        -> TokenRecord
    {
        TokenRecord(
            organization: organization, token: value, fingerprint: Array(repeating: fingerprint, count: 32), fingerprintKeyID: "hmac-1",
            accountKind: merchantToken == nil ? .devicePAN : .merchantPAN, merchantTokenID: merchantToken, sealed: sealed(fingerprint),
            createdAt: t0)
    }

    static let tokenChecks: [StorageConformance] = [
        StorageConformance(name: "tokens: one per account number and organisation") { db in
            let first = C.token("4111110000001112", fingerprint: 1, merchantToken: "DNITHE0001")
            try C.require(try await db.insertToken(first) == .inserted(first), "the first token was not inserted")
            let again = C.token("4111110000009998", fingerprint: 1)
            try C.require(try await db.insertToken(again) == .existing(first), "the same account got a second token")
            try await C.requireError(.conflict, "a token value taken in the organisation") {
                _ = try await db.insertToken(C.token("4111110000001112", fingerprint: 2))
            }
            let elsewhere = C.token("4111110000001112", fingerprint: 1, organization: "org-b")
            try C.require(try await db.insertToken(elsewhere) == .inserted(elsewhere), "another organisation was refused")
            try C.require(try await db.token("4111110000001112", organization: "org-a") == first, "look-up by token")
            try C.require(try await db.token(fingerprint: first.fingerprint, organization: "org-b") == elsewhere, "look-up by fingerprint")
            try C.require(try await db.token("4111110000001112", organization: "org-c") == nil, "found in another organisation")
            try C.require(try await db.tokens(merchantTokenID: "DNITHE0001") == [first], "look-up by merchant token")
        },
        StorageConformance(name: "tokens: state and sealed payload are updated together") { db in
            let record = C.token("5454540000005459", fingerprint: 7)
            _ = try await db.insertToken(record)
            let unlinked = try await db.updateToken(record.token, organization: "org-a", state: .unlinked, sealed: nil, at: C.t0 + 5)
            try C.require(
                unlinked?.state == .unlinked && unlinked?.sealed == record.sealed, "state update: \(String(describing: unlinked))")
            let rewrapped = try await db.updateToken(
                record.token, organization: "org-a", state: .active, sealed: C.sealed(8, key: "kek-2"), at: C.t0 + 6)
            try C.require(rewrapped?.sealed == C.sealed(8, key: "kek-2") && rewrapped?.updatedAt == C.t0 + 6, "re-wrap")
            try C.require(try await db.token(record.token, organization: "org-a") == rewrapped, "read back after update")
            try C.require(
                try await db.updateToken("0000", organization: "org-a", state: .deleted, sealed: nil, at: C.t0) == nil, "unknown token")
        },
        StorageConformance(name: "tokens: an expiry update is a compare-and-set that never writes the state") { db in
            let record = C.token("5454540000005467", fingerprint: 9, merchantToken: "DNITHE0009")
            _ = try await db.insertToken(record)
            let renewed = C.sealed(10, key: "kek-2")
            try C.require(
                try await db.replaceTokenPayload(
                    record.token, organization: "org-a", replacing: record.sealed, with: renewed, at: C.t0 + 5),
                "refused on an unchanged active row")
            var expected = record
            expected.sealed = renewed
            expected.updatedAt = C.t0 + 5
            try C.require(try await db.token(record.token, organization: "org-a") == expected, "the replaced row")
            // Another update from the payload read before the first: refused, the first kept.
            try C.require(
                !(try await db.replaceTokenPayload(
                    record.token, organization: "org-a", replacing: record.sealed, with: C.sealed(11), at: C.t0 + 6)),
                "replaced from a stale read")
            try C.require(try await db.token(record.token, organization: "org-a") == expected, "a stale update changed the row")
            // An unlink landing between the read and the write stays, its time and payload with it.
            try C.require(try await db.unlinkTokens(merchantTokenID: "DNITHE0009", organization: nil, at: C.t0 + 7) == 1, "not unlinked")
            try C.require(
                !(try await db.replaceTokenPayload(
                    record.token, organization: "org-a", replacing: renewed, with: C.sealed(12), at: C.t0 + 8)),
                "an unlinked token's payload replaced")
            expected.state = .unlinked
            expected.updatedAt = C.t0 + 7
            try C.require(try await db.token(record.token, organization: "org-a") == expected, "the unlinked row changed")
            try C.require(
                !(try await db.replaceTokenPayload("0000", organization: "org-a", replacing: renewed, with: C.sealed(12), at: C.t0)),
                "an unknown token replaced")
        },
    ]

    static let registrationRotationChecks: [StorageConformance] = [
        StorageConformance(name: "registrations: listed by key, re-sealed once, counted by the key that hashed their look-up") { db in
            var later = C.registration(13)
            later.createdAt = C.t0 + 100
            for record in [C.registration(11), C.registration(12), later, C.registration(15)] { try await db.insertRegistration(record) }
            var other = C.registration(14)
            other.sealed = C.sealed(14, key: "kek-2")
            other.lookupKeyID = "hmac-2"
            try await db.insertRegistration(other)
            _ = try await db.endRegistration(lookupKey: C.registration(15).lookupKey, ciphertext: C.sealed(15).ciphertext, at: C.t0 + 10)

            let firstTwo = try await db.registrations(sealedWith: "kek-1", limit: 2)
            try C.require(firstTwo == [C.registration(11), C.registration(12)], "limit 2: \(firstTwo.map(\.paypageID))")
            let all = try await db.registrations(sealedWith: "kek-1", limit: 10)
            try C.require(
                all.map(\.paypageID) == ["pp11", "pp12", "pp13"], "an ended row or another key's listed: \(all.map(\.paypageID))")
            try C.require(try await db.registrations(sealedWith: "kek-2", limit: 10) == [other], "kek-2 not listed")

            let key = C.registration(11).lookupKey
            let resealed = C.sealed(21, key: "kek-2")
            try C.require(try await db.resealRegistration(lookupKey: key, previousKeyID: "kek-1", sealed: resealed), "re-seal refused")
            try C.require(try await db.registration(lookupKey: key)?.sealed == resealed, "re-sealed payload not read back")
            try C.require(
                !(try await db.resealRegistration(lookupKey: key, previousKeyID: "kek-1", sealed: C.sealed(22))), "re-sealed twice")
            try C.require(try await db.registration(lookupKey: key)?.sealed == resealed, "the second re-seal overwrote the first")
            let twelve = C.registration(12)
            try C.require(
                !(try await db.resealRegistration(lookupKey: twelve.lookupKey, previousKeyID: "kek-9", sealed: resealed)),
                "re-sealed under the wrong previous key")
            try C.require(try await db.registration(lookupKey: twelve.lookupKey) == twelve, "a refused re-seal changed the row")
            let ended = C.registration(15).lookupKey
            try C.require(
                !(try await db.resealRegistration(lookupKey: ended, previousKeyID: "kek-1", sealed: resealed)), "an ended row re-sealed")
            try C.require(try await db.registration(lookupKey: ended)?.sealed == nil, "an ended row got a payload back")
            try C.require(
                !(try await db.resealRegistration(lookupKey: [9], previousKeyID: "kek-1", sealed: resealed)), "an unknown key re-sealed")
            let left = try await db.registrations(sealedWith: "kek-1", limit: 10)
            try C.require(left.map(\.paypageID) == ["pp12", "pp13"], "after the re-seal: \(left.map(\.paypageID))")

            // By the key each row names, whenever it was made, the tombstone (15) included; a row
            // that names none (written before 0005_vault_bindings) counts for every key.
            var legacy = C.registration(16)
            legacy.lookupKeyID = nil
            legacy.sealed = C.sealed(16, key: "kek-3")
            try await db.insertRegistration(legacy)
            try C.require(try await db.registration(lookupKey: legacy.lookupKey) == legacy, "a row naming no look-up key read back")
            let counted = try await db.registrationCount(lookupKeyID: "hmac-1")
            try C.require(counted == 5, "\(counted) rows for hmac-1, expected 5 with the tombstone and the unnamed row")
            try C.require(try await db.registrationCount(lookupKeyID: "hmac-2") == 2, "hmac-2's row and the unnamed row")
            try C.require(try await db.registrationCount(lookupKeyID: "hmac-9") == 1, "an unknown key: the unnamed row only")
        }
    ]

    static let tokenRotationChecks: [StorageConformance] = [
        StorageConformance(name: "tokens: deleted, listed by key and re-sealed once") { db in
            let a = C.token("4000000000000001", fingerprint: 1)
            let b = C.token("4000000000000002", fingerprint: 2)
            var c = C.token("4000000000000003", fingerprint: 3)
            c.sealed = C.sealed(3, key: "kek-2")
            let d = C.token("4000000000000000", fingerprint: 1, organization: "org-b")
            for record in [d, c, b, a] { _ = try await db.insertToken(record) }

            try C.require(try await db.tokens(sealedWith: "kek-1", limit: 2) == [a, b], "limit 2, by organisation then token")
            try C.require(try await db.tokens(sealedWith: "kek-1", limit: 10) == [a, b, d], "kek-1 listing")
            try C.require(try await db.tokens(sealedWith: "kek-2", limit: 10) == [c], "kek-2 listing")

            let resealed = C.sealed(11, key: "kek-2")
            try C.require(
                try await db.resealToken(a.token, organization: "org-a", previousKeyID: "kek-1", sealed: resealed), "re-seal refused")
            try C.require(try await db.token(a.token, organization: "org-a")?.sealed == resealed, "re-sealed payload not read back")
            try C.require(
                !(try await db.resealToken(a.token, organization: "org-a", previousKeyID: "kek-1", sealed: C.sealed(12))),
                "re-sealed twice")
            try C.require(
                !(try await db.resealToken(b.token, organization: "org-a", previousKeyID: "kek-9", sealed: resealed)),
                "re-sealed under the wrong previous key")
            try C.require(try await db.token(b.token, organization: "org-a") == b, "a refused re-seal changed the row")
            try C.require(
                !(try await db.resealToken(a.token, organization: "org-c", previousKeyID: "kek-2", sealed: resealed)),
                "re-sealed in another organisation")
            try C.require(try await db.tokens(sealedWith: "kek-1", limit: 10) == [b, d], "kek-1 listing after the re-seal")

            try C.require(try await db.deleteToken(b.token, organization: "org-a"), "delete failed")
            try C.require(!(try await db.deleteToken(b.token, organization: "org-a")), "deleted twice")
            try C.require(!(try await db.deleteToken(d.token, organization: "org-a")), "deleted in the wrong organisation")
            try C.require(try await db.token(b.token, organization: "org-a") == nil, "a deleted token was found")
            try C.require(try await db.token(fingerprint: b.fingerprint, organization: "org-a") == nil, "found by fingerprint")
            let successor = C.token("4000000000000009", fingerprint: 2)
            try C.require(try await db.insertToken(successor) == .inserted(successor), "the deleted account number got no new token")
        },
        StorageConformance(name: "tokens: re-fingerprinted by key, never onto another token's fingerprint") { db in
            let a = C.token("4000000000000001", fingerprint: 1)
            let b = C.token("4000000000000002", fingerprint: 2)
            var c = C.token("4000000000000003", fingerprint: 3)
            c.fingerprintKeyID = "hmac-2"
            let d = C.token("4000000000000001", fingerprint: 1, organization: "org-b")
            for record in [d, c, b, a] { _ = try await db.insertToken(record) }

            try C.require(try await db.tokens(fingerprintedWith: "hmac-1", limit: 1) == [a], "limit 1")
            try C.require(try await db.tokens(fingerprintedWith: "hmac-1", limit: 10) == [a, b, d], "hmac-1 listing")
            try C.require(try await db.tokens(fingerprintedWith: "hmac-2", limit: 10) == [c], "hmac-2 listing")

            let new = Array(repeating: UInt8(11), count: 32)
            try C.require(
                try await db.refingerprintToken(
                    a.token, organization: "org-a", previousKeyID: "hmac-1", fingerprint: new, fingerprintKeyID: "hmac-2"),
                "re-fingerprint refused")
            var expected = a
            expected.fingerprint = new
            expected.fingerprintKeyID = "hmac-2"
            try C.require(try await db.token(fingerprint: new, organization: "org-a") == expected, "not found by the new fingerprint")
            try C.require(try await db.token(fingerprint: a.fingerprint, organization: "org-a") == nil, "the old fingerprint stayed")
            try C.require(
                !(try await db.refingerprintToken(
                    a.token, organization: "org-a", previousKeyID: "hmac-1", fingerprint: [7], fingerprintKeyID: "hmac-3")),
                "re-fingerprinted under the wrong previous key")
            try C.require(try await db.token(a.token, organization: "org-a") == expected, "a refused re-fingerprint changed the row")

            try await C.requireError(.conflict, "re-fingerprinting onto another token's fingerprint") {
                _ = try await db.refingerprintToken(
                    b.token, organization: "org-a", previousKeyID: "hmac-1", fingerprint: c.fingerprint, fingerprintKeyID: "hmac-2")
            }
            try C.require(try await db.token(b.token, organization: "org-a") == b, "a conflicting re-fingerprint changed the row")
            // Fingerprints are unique per organisation only.
            try C.require(
                try await db.refingerprintToken(
                    d.token, organization: "org-b", previousKeyID: "hmac-1", fingerprint: new, fingerprintKeyID: "hmac-2"),
                "another organisation's fingerprint was a conflict")
            try C.require(try await db.tokens(fingerprintedWith: "hmac-1", limit: 10) == [b], "hmac-1 listing afterwards")
            let moved = try await db.tokens(fingerprintedWith: "hmac-2", limit: 10).map(\.token)
            try C.require(moved == [a.token, c.token, d.token], "hmac-2 listing afterwards: \(moved)")
        },
        StorageConformance(name: "key usage: live rows counted by use and key") { db in
            try C.require(try await db.keyUsage().isEmpty, "an empty database uses keys")
            var other = C.registration(3)
            other.sealed = C.sealed(3, key: "kek-2")
            for record in [C.registration(1), C.registration(2), other, C.registration(4)] { try await db.insertRegistration(record) }
            _ = try await db.endRegistration(lookupKey: C.registration(4).lookupKey, ciphertext: C.sealed(4).ciphertext, at: C.t0 + 1)
            var b = C.token("4000000000000002", fingerprint: 2)
            b.sealed = C.sealed(2, key: "kek-2")
            var c = C.token("4000000000000003", fingerprint: 3, organization: "org-b")
            c.sealed = C.sealed(3, key: "kek-2")
            c.fingerprintKeyID = "hmac-2"
            for record in [C.token("4000000000000001", fingerprint: 1), b, c] { _ = try await db.insertToken(record) }

            let usage = try await db.keyUsage()
            let expected = [
                KeyUsage(use: .registrationPayloads, keyID: "kek-1", rows: 2),
                KeyUsage(use: .registrationPayloads, keyID: "kek-2", rows: 1),
                KeyUsage(use: .tokenPayloads, keyID: "kek-1", rows: 1), KeyUsage(use: .tokenPayloads, keyID: "kek-2", rows: 2),
                KeyUsage(use: .tokenFingerprints, keyID: "hmac-1", rows: 2),
                KeyUsage(use: .tokenFingerprints, keyID: "hmac-2", rows: 1),
            ]
            try C.require(usage == expected, "key usage: \(usage.map { "\($0.use.rawValue) \($0.keyID) \($0.rows)" })")
        },
    ]

    static let paypageChecks: [StorageConformance] = [
        StorageConformance(name: "paypages: create, list, disable") { db in
            let page = PaypageRecord(
                id: "a1b2", organization: "org-a", merchantIdentifiers: ["merchant.com.example", "merchant.ü"],
                reportGroups: ["Default", ""],
                tokenFormat: "T", createdAt: C.t0)
            try await db.createPaypage(page)
            try await C.requireError(.conflict, "a duplicate paypage") { try await db.createPaypage(page) }
            var other = page
            other.id = "0zz"
            other.reportGroups = []
            try await db.createPaypage(other)
            try C.require(try await db.paypage(id: "a1b2") == page, "read back differs")
            try C.require(try await db.paypages().map(\.id) == ["0zz", "a1b2"], "not listed by id")
            try C.require(try await db.setPaypage(id: "a1b2", enabled: false), "disable failed")
            try C.require(try await db.paypage(id: "a1b2")?.enabled == false, "still enabled")
            try C.require(!(try await db.setPaypage(id: "nope", enabled: false)), "an unknown paypage was disabled")
        }
    ]

    static func event(_ id: String, received offset: TimeInterval, due: TimeInterval? = nil) -> MerchantTokenEventRecord {
        MerchantTokenEventRecord(
            id: id, merchantIdentifier: "merchant.com.example", receivedAt: t0 + offset, nextAttemptAt: due.map { t0 + $0 })
    }

    static let eventChecks: [StorageConformance] = [
        StorageConformance(name: "events: recorded once, read back with every field") { db in
            let first = C.event("e2", received: 2)
            try C.require(try await db.recordEvent(first), "not recorded")
            var again = C.event("e2", received: 9)
            again.merchantIdentifier = "merchant.com.other"
            try C.require(!(try await db.recordEvent(again)), "recorded twice")
            let stored = try await db.event(id: "e2")
            try C.require(stored == first, "a repeated notification changed the event: \(String(describing: stored))")
            try C.require(stored?.nextAttemptAt == C.t0 + 2 && stored?.updatedAt == C.t0 + 2, "the times do not default to receivedAt")
            try C.require(stored?.eventType == nil && stored?.merchantTokenID == nil && stored?.detail == nil, "unfetched fields set")

            let full = MerchantTokenEventRecord(
                id: "e-full", merchantIdentifier: "merchant.com.example", receivedAt: C.t0 + 1, state: .failed, eventType: "UNLINK",
                merchantTokenID: "DNITHE0001", attempts: 5, nextAttemptAt: C.t0 + 90, lastError: "HTTP 503", effect: "none",
                updatedAt: C.t0 + 80, detail: Array(#"{"eventType":"UNLINK"}"#.utf8))
            try C.require(try await db.recordEvent(full), "a full event was not recorded")
            try C.require(try await db.event(id: "e-full") == full, "a full event read back differs")
            try C.require(try await db.event(id: "none") == nil, "an unknown event was found")
        },
        StorageConformance(name: "events: due ones are pending and due, the longest due first") { db in
            for record in [
                C.event("a", received: 1, due: 50), C.event("b", received: 2, due: 10), C.event("c", received: 3, due: 10),
                C.event("d", received: 4, due: 11), C.event("e", received: 5, due: 100),
            ] {
                _ = try await db.recordEvent(record)
            }
            var applied = C.event("f", received: 0, due: 0)
            applied.state = .applied
            var failed = C.event("g", received: 0, due: 0)
            failed.state = .failed
            _ = try await db.recordEvent(applied)
            _ = try await db.recordEvent(failed)
            try C.require(try await db.dueEvents(at: C.t0 + 9, limit: 10).isEmpty, "an event was due early, or a settled one listed")
            try C.require(try await db.dueEvents(at: C.t0 + 10, limit: 10).map(\.id) == ["b", "c"], "due at its time (inclusive)")
            let due = try await db.dueEvents(at: C.t0 + 60, limit: 10).map(\.id)
            try C.require(due == ["b", "c", "d", "a"], "not by next attempt, then id: \(due)")
            try C.require(try await db.dueEvents(at: C.t0 + 60, limit: 2).map(\.id) == ["b", "c"], "limit")
            try C.require(try await db.dueEvents(at: C.t0 + 1000, limit: 10).count == 5, "every pending event is due eventually")
        },
        StorageConformance(name: "events: an update is a compare-and-set on attempts") { db in
            let record = C.event("e1", received: 1)
            _ = try await db.recordEvent(record)
            var fetched = record
            fetched.eventType = "UPDATED_METADATA"
            fetched.merchantTokenID = "DNITHE0002"
            fetched.attempts = 1
            fetched.nextAttemptAt = C.t0 + 61
            fetched.lastError = "Apple answered 500"
            fetched.updatedAt = C.t0 + 2
            fetched.detail = Array(#"{"k":1}"#.utf8)
            try C.require(try await db.updateEvent(fetched, expectedAttempts: 0), "the first update was refused")
            try C.require(try await db.event(id: "e1") == fetched, "the update was not read back whole")

            // Another instance that read the row at attempts 0 loses.
            var stale = record
            stale.attempts = 1
            stale.state = .applied
            try C.require(!(try await db.updateEvent(stale, expectedAttempts: 0)), "a stale update was applied")
            try C.require(try await db.event(id: "e1") == fetched, "a refused update changed the row")

            var done = fetched
            done.state = .applied
            done.attempts = 2
            done.lastError = nil
            done.effect = "metadata recorded on 1 token"
            done.updatedAt = C.t0 + 62
            // The immutable fields are not written, whatever the record says.
            done.merchantIdentifier = "merchant.com.other"
            done.receivedAt = C.t0 + 999
            try C.require(try await db.updateEvent(done, expectedAttempts: 1), "the second update was refused")
            var expected = done
            expected.merchantIdentifier = record.merchantIdentifier
            expected.receivedAt = record.receivedAt
            let stored = try await db.event(id: "e1")
            try C.require(stored == expected, "after the second update: \(String(describing: stored))")
            try C.require(try await db.dueEvents(at: C.t0 + 1000, limit: 10).isEmpty, "an applied event is due")
            var unknown = C.event("none", received: 1)
            unknown.attempts = 1
            try C.require(!(try await db.updateEvent(unknown, expectedAttempts: 0)), "an unknown event was updated")
            try C.require(try await db.event(id: "none") == nil, "an update created an event")
        },
        StorageConformance(name: "events: counted by state, listed newest first") { db in
            for (index, state) in [MerchantTokenEventRecord.State.pending, .applied, .pending, .failed, .applied, .pending].enumerated() {
                var record = C.event("e\(index)", received: TimeInterval(index))
                record.state = state
                _ = try await db.recordEvent(record)
            }
            for state in MerchantTokenEventRecord.State.allCases {
                let count = try await db.eventCount(state: state)
                let expected = ["pending": 3, "applied": 2, "failed": 1][state.rawValue]
                try C.require(count == expected, "\(count) \(state.rawValue), expected \(String(describing: expected))")
            }
            try C.require(
                try await db.events(state: nil, limit: 10).map(\.id) == ["e5", "e4", "e3", "e2", "e1", "e0"], "all: not newest first")
            try C.require(try await db.events(state: nil, limit: 2).map(\.id) == ["e5", "e4"], "all: limit")
            try C.require(try await db.events(state: .pending, limit: 10).map(\.id) == ["e5", "e2", "e0"], "pending")
            try C.require(try await db.events(state: .applied, limit: 1).map(\.id) == ["e4"], "applied, limit 1")
            try C.require(try await db.events(state: .failed, limit: 10).map(\.id) == ["e3"], "failed")
        },
        StorageConformance(name: "events: settled ones past the retention are deleted, oldest first; pending ones never") { db in
            for (index, state) in [MerchantTokenEventRecord.State.applied, .pending, .failed, .applied, .applied].enumerated() {
                var record = C.event("e\(index)", received: TimeInterval(index))
                record.state = state
                _ = try await db.recordEvent(record)
            }
            try C.require(try await db.deleteSettledEvents(before: C.t0 + 3, limit: 1) == 1, "the limit was not kept")
            try C.require(try await db.event(id: "e0") == nil, "the oldest settled event was not the one deleted")
            try C.require(try await db.deleteSettledEvents(before: C.t0 + 3, limit: 10) == 1, "not only e2")
            try C.require(try await db.event(id: "e1")?.state == .pending, "a pending event was deleted")
            try C.require(try await db.events(state: nil, limit: 10).map(\.id) == ["e4", "e3", "e1"], "the wrong events remain")
            try C.require(try await db.deleteSettledEvents(before: C.t0 + 3, limit: 10) == 0, "deleted twice")
        },
    ]

    static let merchantTokenChecks: [StorageConformance] = [
        StorageConformance(name: "tokens: a merchant token's tokens are unlinked once, other tokens untouched") { db in
            let a = C.token("4000000000000011", fingerprint: 1, merchantToken: "DNITHE0001")
            let b = C.token("4000000000000012", fingerprint: 2, organization: "org-b", merchantToken: "DNITHE0001")
            let other = C.token("4000000000000013", fingerprint: 3, merchantToken: "DNITHE0002")
            let dpan = C.token("4000000000000014", fingerprint: 4)
            for record in [a, b, other, dpan] { _ = try await db.insertToken(record) }
            try C.require(
                try await db.unlinkTokens(merchantTokenID: "DNITHE0001", organization: nil, at: C.t0 + 10) == 2, "not both tokens unlinked")
            try C.require(try await db.unlinkTokens(merchantTokenID: "DNITHE0001", organization: nil, at: C.t0 + 20) == 0, "unlinked twice")
            try C.require(
                try await db.unlinkTokens(merchantTokenID: "DNITHE9999", organization: nil, at: C.t0 + 20) == 0, "an unknown one unlinked")
            for record in [a, b] {
                var expected = record
                expected.state = .unlinked
                expected.updatedAt = C.t0 + 10
                let stored = try await db.token(record.token, organization: record.organization)
                try C.require(
                    stored == expected, "the unlinked row is not the row with state and time changed: \(String(describing: stored))")
            }
            try C.require(try await db.token(other.token, organization: "org-a") == other, "another merchant token's token changed")
            try C.require(try await db.token(dpan.token, organization: "org-a") == dpan, "a DPAN's token changed")
        },
        StorageConformance(name: "tokens: an organisation's unlink changes its own tokens only") { db in
            let a = C.token("4000000000000041", fingerprint: 1, merchantToken: "DNITHE0001")
            let b = C.token("4000000000000042", fingerprint: 2, organization: "org-b", merchantToken: "DNITHE0001")
            for record in [a, b] { _ = try await db.insertToken(record) }
            try C.require(
                try await db.unlinkTokens(merchantTokenID: "DNITHE0001", organization: "org-a", at: C.t0 + 10) == 1,
                "not org-a's token alone")
            try C.require(try await db.token(a.token, organization: "org-a")?.state == .unlinked, "org-a's token not unlinked")
            try C.require(try await db.token(b.token, organization: "org-b") == b, "org-b's token changed")
            try C.require(
                try await db.unlinkTokens(merchantTokenID: "DNITHE0001", organization: "org-c", at: C.t0 + 20) == 0,
                "an organisation holding no token unlinked one")
            // Apple's event: every organisation's; the one unlinked already keeps its time.
            try C.require(
                try await db.unlinkTokens(merchantTokenID: "DNITHE0001", organization: nil, at: C.t0 + 30) == 1, "org-b's not unlinked")
            try C.require(try await db.token(a.token, organization: "org-a")?.updatedAt == C.t0 + 10, "the time of unlinking moved")
        },
        StorageConformance(name: "tokens: a merchant token's metadata is recorded on its live and unlinked tokens") { db in
            let a = C.token("4000000000000021", fingerprint: 1, merchantToken: "DNITHE0001")
            let b = C.token("4000000000000022", fingerprint: 2, organization: "org-b", merchantToken: "DNITHE0001")
            let other = C.token("4000000000000023", fingerprint: 3, merchantToken: "DNITHE0002")
            for record in [a, b, other] { _ = try await db.insertToken(record) }
            try C.require(try await db.token(a.token, organization: "org-a")?.merchantTokenMetadata == nil, "metadata before any event")
            _ = try await db.updateToken(b.token, organization: "org-b", state: .unlinked, sealed: nil, at: C.t0 + 5)
            let metadata = Array(#"{"cardMetadata":{"fpanSuffix":"1488","expirationDate":"05/30"}}"#.utf8)
            func record(_ token: TokenRecord, replacing expected: [UInt8]?, with metadata: [UInt8], at time: TimeInterval) async throws
                -> Bool
            {
                try await db.replaceMerchantTokenMetadata(
                    token.token, organization: token.organization, replacing: expected, with: metadata, at: C.t0 + time)
            }
            try C.require(try await record(a, replacing: nil, with: metadata, at: 30), "the active token's metadata was not recorded")
            try C.require(try await record(b, replacing: nil, with: metadata, at: 30), "the unlinked token's metadata was not recorded")
            var expectedA = a
            expectedA.merchantTokenMetadata = metadata
            expectedA.updatedAt = C.t0 + 30
            try C.require(try await db.token(a.token, organization: "org-a") == expectedA, "the active token's metadata")
            let unlinked = try await db.token(b.token, organization: "org-b")
            try C.require(
                unlinked?.merchantTokenMetadata == metadata && unlinked?.state == .unlinked && unlinked?.updatedAt == C.t0 + 5,
                "the unlinked token's metadata, or its time of unlinking changed: \(String(describing: unlinked))")
            let newer = Array(#"{"cardArt":[]}"#.utf8)
            // A writer that read the token before the first event's metadata landed writes nothing.
            try C.require(!(try await record(a, replacing: nil, with: newer, at: 40)), "a stale merge replaced recorded metadata")
            try C.require(try await record(a, replacing: metadata, with: newer, at: 40), "again")
            try C.require(try await db.token(a.token, organization: "org-a")?.merchantTokenMetadata == newer, "the latest not kept")
            try C.require(try await db.token(other.token, organization: "org-a") == other, "another merchant token's token changed")
            var unknown = a
            unknown.token = "4000000000000999"
            try C.require(!(try await record(unknown, replacing: nil, with: newer, at: 0)), "unknown")
            // Metadata survives the row's other updates and is written by insert.
            _ = try await db.updateToken(a.token, organization: "org-a", state: .active, sealed: C.sealed(9, key: "kek-2"), at: C.t0 + 50)
            try C.require(try await db.token(a.token, organization: "org-a")?.merchantTokenMetadata == newer, "lost by a re-seal")
            var inserted = C.token("4000000000000024", fingerprint: 4, merchantToken: "DNITHE0003")
            inserted.merchantTokenMetadata = metadata
            _ = try await db.insertToken(inserted)
            try C.require(try await db.token(inserted.token, organization: "org-a") == inserted, "metadata not written by insert")
        },
        StorageConformance(name: "tokens: the purge deletes unlinked tokens older than the cut-off, in batches") { db in
            let tokens = (1...6).map { C.token("40000000000000\(30 + $0)", fingerprint: UInt8($0), merchantToken: "DNITHE000\($0)") }
            for record in tokens { _ = try await db.insertToken(record) }
            // Unlinked at t0+1, +2, +3 and +10; the fifth is active (and old); the sixth is deleted-state.
            for (index, time) in [1.0, 2, 3, 10].enumerated() {
                _ = try await db.unlinkTokens(merchantTokenID: "DNITHE000\(index + 1)", organization: nil, at: C.t0 + time)
            }
            _ = try await db.updateToken(tokens[5].token, organization: "org-a", state: .deleted, sealed: nil, at: C.t0 + 1)
            try C.require(try await db.deleteUnlinkedTokens(before: C.t0 + 1, limit: 10) == 0, "the cut-off is not strict")
            try C.require(try await db.deleteUnlinkedTokens(before: C.t0 + 10, limit: 2) == 2, "the first batch was not 2")
            try C.require(try await db.token(tokens[0].token, organization: "org-a") == nil, "the oldest unlinked token stayed")
            try C.require(try await db.token(tokens[1].token, organization: "org-a") == nil, "the second oldest stayed")
            try C.require(try await db.deleteUnlinkedTokens(before: C.t0 + 10, limit: 2) == 1, "the second batch was not 1")
            try C.require(try await db.deleteUnlinkedTokens(before: C.t0 + 10, limit: 2) == 0, "a newer or live token was purged")
            let late = try await db.token(tokens[3].token, organization: "org-a")
            try C.require(late?.state == .unlinked && late?.sealed == tokens[3].sealed, "the recently unlinked token changed")
            try C.require(try await db.token(tokens[4].token, organization: "org-a") == tokens[4], "an active token changed")
            try C.require(try await db.token(tokens[5].token, organization: "org-a")?.state == .deleted, "a deleted-state row purged")
            try C.require(try await db.deleteUnlinkedTokens(before: C.t0 + 11, limit: 10) == 1, "the last unlinked token")
            try C.require(try await db.tokens(merchantTokenID: "DNITHE0004").isEmpty, "still found by merchant token")
            let counts = try await db.rowCounts()
            try C.require(counts.first { $0.table == "high_value_tokens" }?.rows == 2, "row counts: \(counts)")
        },
    ]

    static let migrationChecks: [StorageConformance] = [
        StorageConformance(name: "migrations: a migrated database is current, and migrating again does nothing") { db in
            let status = try await db.schemaStatus()
            try C.require(status.isCurrent && status.version == Schema.migrations.count, "not current: \(status)")
            try C.require(try await db.migrate().isEmpty, "migrated twice")
            try C.require(Set(try await db.rowCounts().map(\.table)) == Set(Schema.tables), "tables missing")
            try await db.checkConnection()
        }
    ]

    static let keyRecordChecks: [StorageConformance] = [
        StorageConformance(name: "key records: inserted once, updated by compare-and-set, deleted") { db in
            let record = StoredKeyRecord(
                keyID: "0a1b", record: Array(#"{"state":"pending"}"#.utf8), certificate: nil, revision: 1,
                updatedAt: C.t0)
            try C.require(try await db.insertKeyRecord(record), "not inserted")
            var other = record
            other.record = Array(#"{"state":"other"}"#.utf8)
            try C.require(!(try await db.insertKeyRecord(other)), "inserted twice")
            let readBack = try await db.keyRecords()
            try C.require(readBack == [record], "read back differs: \(readBack)")

            var active = record
            active.record = Array(#"{"state":"active"}"#.utf8)
            active.certificate = [0x30, 0x82, 0x00, 0xFF]
            active.revision = 2
            active.updatedAt = C.t0 + 5
            try C.require(try await db.updateKeyRecord(active, expectedRevision: 1), "the update at revision 1 failed")
            var stale = record
            stale.revision = 2
            try C.require(!(try await db.updateKeyRecord(stale, expectedRevision: 1)), "a stale revision overwrote the record")
            var unknown = record
            unknown.keyID = "ffff"
            try C.require(!(try await db.updateKeyRecord(unknown, expectedRevision: 1)), "an unknown key was updated")
            let second = StoredKeyRecord(keyID: "00ff", record: [0x7B, 0x7D], certificate: nil, revision: 1, updatedAt: C.t0)
            try C.require(try await db.insertKeyRecord(second), "a second key was not inserted")
            try C.require(try await db.keyRecords() == [second, active], "not listed by key id with every field")

            // A delete is a compare-and-set on the revision read, like an update.
            try C.require(!(try await db.deleteKeyRecord(keyID: "0a1b", expectedRevision: 1)), "a stale revision deleted the record")
            try C.require(try await db.deleteKeyRecord(keyID: "0a1b", expectedRevision: 2), "not deleted")
            try C.require(!(try await db.deleteKeyRecord(keyID: "0a1b", expectedRevision: 2)), "deleted twice")
            try C.require(try await db.keyRecords() == [second], "the other record went too")
        },
        StorageConformance(name: "upstream client keys: one per upstream, its time kept while the key stays") { db in
            try C.require(try await db.upstreamClientKeys().isEmpty, "not empty at first")
            let first = UpstreamClientKeyRecord(upstream: "radial", keyID: "0a1b", since: C.t0)
            try C.require(try await db.recordUpstreamClientKey(first), "not recorded")
            // Another instance recording the same choice later changes nothing.
            try C.require(
                !(try await db.recordUpstreamClientKey(.init(upstream: "radial", keyID: "0a1b", since: C.t0 + 60))), "re-recorded")
            let cnp = UpstreamClientKeyRecord(upstream: "cnpapi", keyID: "0a1b", since: C.t0 + 1)
            try C.require(try await db.recordUpstreamClientKey(cnp), "a second upstream was not recorded")
            try C.require(try await db.upstreamClientKeys() == [cnp, first], "not listed by upstream with every field")
            let changedOver = UpstreamClientKeyRecord(upstream: "radial", keyID: "00ff", since: C.t0 + 120)
            try C.require(try await db.recordUpstreamClientKey(changedOver), "the changeover was not recorded")
            try C.require(try await db.upstreamClientKeys() == [cnp, changedOver], "the changeover did not replace the row")
        },
    ]
}
