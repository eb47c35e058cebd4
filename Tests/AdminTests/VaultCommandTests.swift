import Foundation
import PaywardenPrimitives
import PaywardenTestTraits
import PaywardenTesting
import Testing

/// `paywarden paypages` and `paywarden vault` against a SoftHSM token and an empty SQLite vault:
/// what each prints, what it refuses, and the one audit record each writes. Rows moving onto a
/// new key are the Vault tests' business; here nothing is sealed yet.
@Suite(.serialized, .releasesTestResources)
struct VaultCommandTests {
    struct Paypage: Decodable, Equatable {
        let id: String
        let organization: OrganizationID
        let merchantIds: [String]
        let reportGroups: [String]
        let tokenFormat: String
        let enabled: Bool
    }

    struct Key: Decodable {
        let id: String
        let purpose: String
        let kind: String
    }

    struct Created: Decodable {
        let paypage: Paypage
        let createdKeys: [Key]
    }

    struct Status: Decodable {
        struct Key: Decodable {
            let id: String
            let kind: String
            let state: String
            let rows: Int
        }

        struct Purpose: Decodable {
            let purpose: String
            let pending: Int
            let keys: [Key]
        }

        let purposes: [Purpose]

        func keys(_ purpose: String) -> [Key] {
            purposes.first { $0.purpose == purpose }?.keys ?? []
        }
    }

    struct Rotation: Decodable {
        let purpose: String
        let key: Key
        let rowsMoved: Int
        let pending: Int
        let destroyed: [Key]
        let remaining: [Key]
    }

    func decode<Value: Decodable>(_ type: Value.Type, _ output: PaywardenProcess.Output) throws -> Value {
        try JSONDecoder().decode(type, from: Data(output.stdout.utf8))
    }

    /// The first paypage creates the vault's keys; a second of the same organisation must keep its
    /// token format; ids are never reused; a disabled paypage stays listed.
    @Test func paypagesAreCreatedListedAndDisabled() async throws {
        let env = try await AdminTestEnvironment.make()
        let first = try env.paywarden(
            "paypages", "create", "--paypage-id", "Page1", "--organization", "acme", "--merchant-id", "merchant.com.acme",
            "--merchant-id", "merchant.com.acme.eu", "--report-group", "web", "--json")
        #expect(first.status == 0, "\(first.stderr)")
        let created = try decode(Created.self, first)
        #expect(
            created.paypage
                == Paypage(
                    id: "Page1", organization: "acme", merchantIds: ["merchant.com.acme", "merchant.com.acme.eu"], reportGroups: ["web"],
                    tokenFormat: "T", enabled: true))
        #expect(created.createdKeys.map(\.purpose) == ["registrations", "tokens", "fingerprint"])
        #expect(created.createdKeys.last?.kind == "hmac-sha256")

        let otherFormat = try env.paywarden(
            "paypages", "create", "--paypage-id", "Page2", "--organization", "acme", "--merchant-id", "merchant.com.acme",
            "--token-format", "D")
        #expect(otherFormat.status == 1)
        #expect(
            otherFormat.stderr == "paywarden: organisation acme issues format T tokens (paypage Page1); a paypage of it cannot use D\n")
        let duplicate = try env.paywarden(
            "paypages", "create", "--paypage-id", "Page1", "--organization", "globex", "--merchant-id", "merchant.com.globex")
        #expect(duplicate.status == 1)
        #expect(duplicate.stderr == "paywarden: paypage Page1 exists; paypage ids are never reused\n")
        let badFormat = try env.paywarden(
            "paypages", "create", "--paypage-id", "Page9", "--organization", "acme", "--merchant-id", "m", "--token-format", "X")
        #expect(badFormat.status == 64 || badFormat.status == 2)

        // The keys exist now: nothing more is created, and the text names the paypage.
        let second = try env.paywarden(
            "paypages", "create", "--paypage-id", "Page3", "--organization", "acme", "--merchant-id", "merchant.com.acme")
        #expect(second.status == 0, "\(second.stderr)")
        #expect(!second.stdout.contains("created vault"))
        #expect(second.stdout.hasPrefix("created paypage Page3  acme  format T  enabled  created "))
        #expect(second.stdout.hasSuffix("merchant ids merchant.com.acme  any report group\n"))

        let disabled = try env.paywarden("paypages", "disable", "Page1")
        #expect(disabled.status == 0, "\(disabled.stderr)")
        let unknown = try env.paywarden("paypages", "disable", "Nope")
        #expect(unknown.status == 1)
        #expect(unknown.stderr == "paywarden: there is no paypage Nope; paywarden paypages list shows them\n")

        let list = try env.paywarden("paypages", "list", "--json")
        #expect(list.status == 0, "\(list.stderr)")
        let listed = try decode([Paypage].self, list).sorted { $0.id < $1.id }
        #expect(listed.map(\.id) == ["Page1", "Page3"])
        #expect(listed.map(\.enabled) == [false, true])
        #expect(listed[0].merchantIds == ["merchant.com.acme", "merchant.com.acme.eu"])

        let audit = try env.audit()
        #expect(
            audit.map(\.action) == [
                "paypages.create", "paypages.create", "paypages.create", "paypages.create", "paypages.disable", "paypages.disable",
                "paypages.list",
            ])
        #expect(audit.map(\.result) == ["ok", "refused", "refused", "ok", "ok", "refused", "ok"])
        // The first names every key it created; a refusal names the paypage it concerned.
        for key in created.createdKeys { #expect(audit[0].detail?.contains(key.id) == true) }
        #expect(audit[1].detail?.hasPrefix("paypage Page2 of organisation acme; organisation acme issues format T") == true)
        #expect(audit.allSatisfy { !$0.user.isEmpty })
    }

    /// One current key per purpose; rotating the tokens key with the shortest grace allowed (twice a
    /// one-second maintenance interval) leaves only the new key, first with --no-wait (the old key
    /// stays for the service), then waiting (both old keys go).
    @Test func statusAndRotation() async throws {
        let env = try await AdminTestEnvironment.make()
        let noGrace = ["PAYWARDEN_VAULT_MAINTENANCE_SECONDS": "1", "PAYWARDEN_VAULT_RETIRED_KEY_GRACE_SECONDS": "2"]
        #expect(
            try env.paywarden("paypages", "create", "--paypage-id", "Page1", "--organization", "acme", "--merchant-id", "m.acme").status
                == 0)
        let before = try decode(Status.self, try env.paywarden("vault", "status", "--json"))
        #expect(before.purposes.map(\.purpose) == ["registrations", "tokens", "fingerprint"])
        #expect(before.purposes.allSatisfy { $0.keys.count == 1 && $0.keys[0].state == "current" && $0.pending == 0 })
        let text = try env.paywarden("vault", "status")
        #expect(text.stdout.hasPrefix("registrations: nothing pending\n  \(before.keys("registrations")[0].id)  "))

        let deferred = try env.paywarden("vault", "rotate-key", "--purpose", "tokens", "--no-wait", environment: noGrace)
        #expect(deferred.status == 0, "\(deferred.stderr)")
        #expect(deferred.stdout.contains("the running service's maintenance (every 1s, vault_maintenance_seconds) moves the rows"))
        let middle = try decode(Status.self, try env.paywarden("vault", "status", "--json"))
        #expect(middle.keys("tokens").map(\.state) == ["current", "rotated-out"])
        #expect(middle.keys("tokens")[1].id == before.keys("tokens")[0].id)

        let rotated = try env.paywarden("vault", "rotate-key", "--purpose", "tokens", "--json", environment: noGrace)
        #expect(rotated.status == 0, "\(rotated.stderr)")
        let rotation = try decode(Rotation.self, rotated)
        #expect(rotation.purpose == "tokens")
        #expect(rotation.rowsMoved == 0 && rotation.pending == 0 && rotation.remaining.isEmpty)
        #expect(Set(rotation.destroyed.map(\.id)) == Set(middle.keys("tokens").map(\.id)))

        let after = try decode(Status.self, try env.paywarden("vault", "status", "--json"))
        #expect(after.keys("tokens").map(\.id) == [rotation.key.id])
        #expect(after.keys("registrations").map(\.id) == before.keys("registrations").map(\.id))
        #expect(after.keys("fingerprint").map(\.id) == before.keys("fingerprint").map(\.id))

        let fingerprint = try env.paywarden("vault", "rotate-key", "--purpose", "fingerprint", environment: noGrace)
        #expect(fingerprint.status == 0, "\(fingerprint.stderr)")
        #expect(fingerprint.stdout.contains("destroyed fingerprint key \(before.keys("fingerprint")[0].id) (hmac-sha256)"))
        #expect(try env.paywarden("vault", "rotate-key", "--purpose", "keys").status != 0)

        let audit = try env.audit().filter { $0.action == "vault.rotate-key" }
        #expect(audit.map(\.result) == ["ok", "ok", "ok"])
        #expect(audit[1].keyID == rotation.key.id)
        for old in middle.keys("tokens") { #expect(audit[1].detail?.contains("tokens key \(old.id) (\(old.kind))") == true) }
        #expect(audit[1].detail?.contains("keys destroyed: ") == true)
    }

    @Test func purgeOfAnEmptyVault() async throws {
        let env = try await AdminTestEnvironment.make()
        let purged = try env.paywarden("vault", "purge")
        #expect(purged.status == 0, "\(purged.stderr)")
        #expect(purged.stdout == "purged expired registrations: 0 payloads destroyed, 0 tombstones deleted\n")
        let json = try env.paywarden("vault", "purge", "--json")
        #expect(try decode([String: Int].self, json) == ["payloadsDestroyed": 0, "tombstonesDeleted": 0])
        let audit = try env.audit()
        #expect(audit.map(\.action) == ["vault.purge", "vault.purge"])
        #expect(audit.first?.detail == "0 payloads destroyed, 0 tombstones deleted")
    }

    /// Keys for the vault routes act for one organisation: one without it is refused as it is made.
    @Test func apiKeysForVaultRoutesNeedAnOrganization() async throws {
        let env = try await AdminTestEnvironment.make()
        for scope in ["redeem", "detokenize", "decrypt+merchant-tokens"] {
            let refused = try env.paywarden("apikeys", "create", "--scope", scope)
            #expect(refused.status == 64 || refused.status == 2)
            #expect(refused.stderr.contains("acts for one merchant organisation: add --organization ORG"))
        }
        #expect(try env.paywarden("apikeys", "create", "--scope", "redeem", "--organization", "acme").status == 0)
        #expect(try env.paywarden("apikeys", "create", "--scope", "decrypt").status == 0)
    }
}
