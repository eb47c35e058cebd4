import ArgumentParser
import Foundation
import PaywardenPrimitives
import PaywardenStorage
import Vault

public struct PaypagesCommand: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "paypages",
        abstract: "Paypages: the eProtect paypageIds apps register cards with, and what each allows.",
        discussion: """
            A paypage belongs to an organisation (the --organization of its API keys), allows tokens encrypted to \
            its Apple Pay merchant identifiers, and fixes the organisation's high-value token format. Paypage ids \
            are never reused; disable a paypage instead of deleting it.
            """,
        subcommands: [PaypagesCreate.self, PaypagesList.self, PaypagesDisable.self]
    )
}

/// A paypage as the CLI prints it (`--json` uses the same fields).
struct PaypageView: Encodable {
    let id: String
    let organization: OrganizationID
    let merchantIds: [String]
    let reportGroups: [String]
    let tokenFormat: String
    let enabled: Bool
    let createdAt: Date

    init(_ record: PaypageRecord) {
        id = record.id
        organization = record.organization
        merchantIds = record.merchantIdentifiers
        reportGroups = record.reportGroups
        tokenFormat = record.tokenFormat
        enabled = record.enabled
        createdAt = record.createdAt
    }

    var line: String {
        let groups = reportGroups.isEmpty ? "any report group" : "report groups \(reportGroups.joined(separator: ","))"
        return
            "\(id)  \(organization)  format \(tokenFormat)  \(enabled ? "enabled" : "disabled")  "
            + "created \(ISO8601DateFormatter().string(from: createdAt))  merchant ids \(merchantIds.joined(separator: ","))  \(groups)"
    }
}

/// A vault key as the CLI prints it.
struct VaultKeyView: Encodable {
    let id: String
    let purpose: String
    let kind: String
    let createdAt: Date

    init(_ key: VaultKey) {
        id = key.id.hex
        purpose = key.purpose.rawValue
        kind = key.kind.rawValue
        createdAt = key.createdAt
    }
}

struct PaypagesCreate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create a paypage; the vault's keys are created first if the HSM has none yet.",
        discussion: """
            Every paypage of an organisation issues the same token format: tokens are static per account number \
            and organisation. Format T keeps the account number's length, D makes at least 16 digits.
            """
    )

    @Option(name: .customLong("paypage-id"), help: "The paypageId apps post (letters and digits).")
    var paypageID: String

    @Option(help: "The merchant organisation the paypage belongs to (letters, digits, - and _).")
    var organization: OrganizationID

    @Option(name: .customLong("merchant-id"), help: "An Apple Pay merchant identifier the paypage allows (repeat for several).")
    var merchantIDs: [String]

    @Option(name: .customLong("token-format"), help: "The high-value token format: T or D.")
    var tokenFormat = HighValueTokenFormat.t.rawValue

    @Option(name: .customLong("report-group"), help: "A cnpAPI reportGroup the paypage allows (repeat for several; default: any).")
    var reportGroups: [String] = []

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func validate() throws {
        guard HighValueTokenFormat(rawValue: tokenFormat) != nil else {
            throw ValidationError("--token-format takes \(HighValueTokenFormat.allCases.map(\.rawValue).joined(separator: " or "))")
        }
    }

    struct Report: Encodable {
        let paypage: PaypageView
        let createdKeys: [VaultKeyView]
    }

    func run() async throws {
        try await VaultAdmin("paypages.create").run(hsm: hsmOptions) { vault, _, audit in
            audit.note("paypage \(paypageID) of organisation \(organization)")
            // Keys first: a paypage without them would take registrations the vault cannot seal.
            let created = try await vault.keyring.createMissing()
            if !created.isEmpty { audit.note("vault keys created: " + created.map(\.summary).joined(separator: ", ")) }
            let paypage = try await vault.createPaypage(
                id: paypageID, organization: organization, merchantIdentifiers: merchantIDs, reportGroups: reportGroups,
                tokenFormat: HighValueTokenFormat(rawValue: tokenFormat) ?? .t)
            audit.note(
                "format \(paypage.tokenFormat), merchant ids \(paypage.merchantIdentifiers.joined(separator: ",")), "
                    + (paypage.reportGroups.isEmpty ? "any report group" : "report groups \(paypage.reportGroups.joined(separator: ","))"))
            if output.json {
                try printJSON(Report(paypage: PaypageView(paypage), createdKeys: created.map(VaultKeyView.init)))
                return
            }
            for key in created { print("created vault \(key.summary)") }
            print("created paypage \(PaypageView(paypage).line)")
        }
    }
}

struct PaypagesList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List paypages: id, organisation, format, enabled, created, merchant ids, report groups."
    )

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await VaultAdmin("paypages.list", mutates: false).run(hsm: hsmOptions) { vault, _, audit in
            let views = try await vault.paypages().map(PaypageView.init)
            audit.note("\(views.count) paypages")
            if output.json {
                try printJSON(views)
            } else if views.isEmpty {
                print("no paypages; create one with `paywarden paypages create --paypage-id ID --organization ORG --merchant-id MID`")
            } else {
                for view in views { print(view.line) }
            }
        }
    }
}

struct PaypagesDisable: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "disable",
        abstract: "Disable a paypage: apps posting to it are refused (879); its registrations stay redeemable."
    )

    @Argument(help: "The paypage id.")
    var paypageID: String

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await VaultAdmin("paypages.disable").run(hsm: hsmOptions) { vault, _, audit in
            audit.note("paypage \(paypageID)")
            try await vault.disablePaypage(paypageID)
            if output.json {
                try printJSON(["disabled": paypageID])
            } else {
                print("disabled paypage \(paypageID): apps posting to it are refused from now on; its registrations stay redeemable")
            }
        }
    }
}
