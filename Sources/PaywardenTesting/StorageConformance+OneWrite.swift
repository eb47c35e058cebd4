import Foundation
import PaywardenStorage

/// The writes a request makes as one: a replay claim decided before it is durable, a
/// registration stored with its token's claim, a redemption counted with its account's new token.
extension StorageConformance {
    private typealias C = StorageConformance

    static let oneWriteChecks: [StorageConformance] = [
        StorageConformance(name: "replay: a claim is decided when answered, and is refused again before it is awaited") { db in
            let id = C.transaction(30)
            let first = try await db.claim(id, until: C.t0 + 300, now: C.t0)
            try C.require(first.claimed, "the first claim was refused")
            // The second claim comes before the first was awaited: the answer was final already.
            let second = try await db.claim(id, until: C.t0 + 300, now: C.t0 + 1)
            try C.require(!second.claimed, "a second claim was granted before the first was made durable")
            try await db.awaitDurable(first.ticket)
            try await db.awaitDurable(second.ticket)
            try C.require(second.ticket >= first.ticket, "a later claim was given an earlier place: \(second.ticket) < \(first.ticket)")
            try C.require(try await db.isClaimed(id, now: C.t0 + 2), "a durable claim is not seen by the look")
            try C.require(!(try await db.isClaimed(id, now: C.t0 + 300)), "an expired claim is seen")
            try C.require(!(try await db.isClaimed(C.transaction(31), now: C.t0)), "an unclaimed id is seen")
        },
        StorageConformance(name: "registrations: a registration and its token's claim are one write") { db in
            let claim = ReplayClaimRequest(transactionID: C.transaction(40), expiry: C.t0 + 300, now: C.t0)
            let record = C.registration(40)
            try C.require(try await db.insertRegistration(record, claiming: claim), "a fresh claim was refused")
            try C.require(try await db.registration(lookupKey: record.lookupKey) == record, "the registration was not stored")
            try C.require(try await db.isClaimed(claim.transactionID, now: C.t0 + 1), "the claim was not made")
            // The same token again (a replay that raced past the look): nothing is stored.
            let replay = C.registration(41)
            try C.require(!(try await db.insertRegistration(replay, claiming: claim)), "a replayed claim stored a registration")
            try C.require(try await db.registration(lookupKey: replay.lookupKey) == nil, "a refused claim stored its registration")
            // A drawn ID that exists: neither the registration nor the claim is written.
            let fresh = ReplayClaimRequest(transactionID: C.transaction(42), expiry: C.t0 + 300, now: C.t0)
            try await C.requireError(.conflict, "a registration ID drawn twice") {
                _ = try await db.insertRegistration(record, claiming: fresh)
            }
            try C.require(!(try await db.isClaimed(fresh.transactionID, now: C.t0)), "a claim outlived its refused registration")
            // An expired claim is taken over, as by a claim alone.
            let later = ReplayClaimRequest(transactionID: C.transaction(40), expiry: C.t0 + 900, now: C.t0 + 300)
            try C.require(try await db.insertRegistration(C.registration(43), claiming: later), "an expired claim was not taken over")
        },
        StorageConformance(name: "redemptions: a count and the account's new token are one write") { db in
            let record = C.registration(50, expires: 100)
            try await db.insertRegistration(record)
            let token = C.token("4111110000005550", fingerprint: 50)
            let first = try await db.recordRedemption(lookupKey: record.lookupKey, now: C.t0 + 10, issuing: token)
            try C.require(first.registration?.redemptions == 1, "not counted: \(String(describing: first.registration))")
            try C.require(first.token == .inserted(token), "the token was not stored: \(String(describing: first.token))")
            try C.require(try await db.token(token.token, organization: "org-a") == token, "the token cannot be read back")
            // The account has its token: a second draft gives the existing one, and is counted.
            let again = try await db.recordRedemption(
                lookupKey: record.lookupKey, now: C.t0 + 20, issuing: C.token("4111110000006660", fingerprint: 50))
            try C.require(again.registration?.redemptions == 2 && again.token == .existing(token), "again: \(again)")
            // A drawn token value taken by another account: nothing written, not even the count.
            let other = C.registration(51, expires: 100)
            try await db.insertRegistration(other)
            try await C.requireError(.conflict, "a token value drawn twice") {
                _ = try await db.recordRedemption(
                    lookupKey: other.lookupKey, now: C.t0 + 30, issuing: C.token("4111110000005550", fingerprint: 51))
            }
            try C.require(try await db.registration(lookupKey: other.lookupKey)?.redemptions == 0, "a refused write counted")
            // Not live: the row as it is, and no token.
            let late = try await db.recordRedemption(
                lookupKey: other.lookupKey, now: C.t0 + 100, issuing: C.token("4111110000007770", fingerprint: 52))
            try C.require(late.registration == other && late.token == nil, "an expired registration was redeemed: \(late)")
            try C.require(try await db.token("4111110000007770", organization: "org-a") == nil, "an uncounted redemption stored a token")
            let unknown = try await db.recordRedemption(lookupKey: [9], now: C.t0, issuing: C.token("4111110000008880", fingerprint: 53))
            try C.require(unknown.registration == nil && unknown.token == nil, "an unknown registration was redeemed")
        },
    ]
}
