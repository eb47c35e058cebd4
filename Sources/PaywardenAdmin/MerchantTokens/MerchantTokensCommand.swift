import ArgumentParser
import Foundation
import KeyCustody
import Logging
import MerchantTokens
import OutboundTLS
import PaywardenConfiguration
import PaywardenServices
import PaywardenStorage
import Vault

public struct MerchantTokensCommand: AsyncParsableCommand {
    public init() {}

    public static let configuration = CommandConfiguration(
        commandName: "merchant-tokens",
        abstract: "Apple's merchant-token events, and the calls to Apple for one merchant token.",
        discussion: """
            Apple notifies GET {public base}/v1/apple-pay/{merchantId}/notification/merchantToken/{eventId}; the running service \
            records each event, fetches its details from Apple over mutual TLS with the merchant's identity certificate (the key \
            stays in the HSM), and applies it to the vault. Calls to Apple go to \(SettingCatalog.applePayGateway.environmentName).
            """,
        subcommands: [MerchantTokenEvents.self, MerchantTokenRetry.self, MerchantTokenUnlink.self, MerchantTokenUpdateURL.self]
    )
}

/// Runs a merchant-token command with a ``MerchantTokenService`` over the HSM, the database and
/// Apple's gateway as configured; the admin command's own audit record is the only one written.
struct MerchantTokenAdmin {
    let name: String
    let mutates: Bool

    func run(
        hsm options: HSMOptions,
        _ body: @Sendable (_ service: MerchantTokenService, _ vault: CardVault, _ audit: VaultAudit) async throws -> Void
    ) async throws {
        try await AppleGatewayAdmin(name: name, mutates: mutates).run(hsm: options) { context in
            // As the service has it, so a retried event also seals again or deletes the token's usage information.
            let usageInformation = context.configuration.publicURL.map {
                UsageInformationConfiguration(
                    store: context.database, senderKeys: SenderKeys(hsm: context.vault.keyring.hsm), publicURL: $0)
            }
            let service = MerchantTokenService(
                gateway: context.gateway, vault: context.vault, events: context.database, keys: context.keys,
                policy: context.configuration.eventPolicy, metrics: nil, audit: nil, logger: context.logger,
                usageInformation: usageInformation)
            try await body(service, context.vault, context.audit)
        }
    }
}

/// One event as `merchant-tokens events` prints it.
struct MerchantTokenEventView: Encodable {
    let id: String
    let merchantId: String
    let state: String
    let eventType: String?
    let merchantTokenId: String?
    let attempts: Int
    let nextAttemptAt: Date?
    let lastError: String?
    let effect: String?
    let receivedAt: Date
    let updatedAt: Date

    init(_ record: MerchantTokenEventRecord) {
        id = record.id
        merchantId = record.merchantIdentifier
        state = record.state.rawValue
        eventType = record.eventType
        merchantTokenId = record.merchantTokenID
        attempts = record.attempts
        nextAttemptAt = record.state == .pending ? record.nextAttemptAt : nil
        lastError = record.lastError
        effect = record.effect
        receivedAt = record.receivedAt
        updatedAt = record.updatedAt
    }

    var line: String {
        let time = ISO8601DateFormatter()
        var text = "\(id)  \(merchantId)  \(state)  \(eventType ?? "-")  token \(merchantTokenId ?? "-")  attempts \(attempts)"
        text += "  received \(time.string(from: receivedAt))"
        if let nextAttemptAt { text += "  next \(time.string(from: nextAttemptAt))" }
        if let effect { text += "  effect: \(effect)" }
        if let lastError { text += "  last error: \(lastError)" }
        return text
    }
}

struct MerchantTokenEvents: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events", abstract: "Recorded merchant-token events, newest first, with their state, attempts and effect.")

    @Option(help: "pending, applied or failed (default: all).")
    var state: String?

    @Option(help: "How many events at most.")
    var limit = 100

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func validate() throws {
        if let state, MerchantTokenEventRecord.State(rawValue: state) == nil {
            throw ValidationError("--state takes pending, applied or failed")
        }
        guard (1...10_000).contains(limit) else { throw ValidationError("--limit takes 1 to 10000") }
    }

    func run() async throws {
        try await MerchantTokenAdmin(name: "merchant-tokens.events", mutates: false).run(hsm: hsmOptions) { service, _, audit in
            let records: [MerchantTokenEventRecord]
            do throws(StorageError) {
                records = try await service.events.events(
                    state: state.flatMap(MerchantTokenEventRecord.State.init(rawValue:)), limit: limit)
            } catch {
                throw CommandFailure(error)
            }
            audit.note("\(records.count) events listed")
            let views = records.map(MerchantTokenEventView.init)
            if output.json {
                try printJSON(views)
            } else if views.isEmpty {
                print("no merchant-token events recorded\(state.map { " in state \($0)" } ?? "")")
            } else {
                for view in views { print(view.line) }
            }
        }
    }
}

struct MerchantTokenRetry: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry",
        abstract: "Fetch and apply one pending or failed event now.",
        discussion: "Apple keeps an event's details for seven days; after that a retry can only fail again.")

    @Argument(help: "The event id, as `merchant-tokens events` lists it.")
    var event: String

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await MerchantTokenAdmin(name: "merchant-tokens.retry", mutates: true).run(hsm: hsmOptions) { service, _, audit in
            audit.note("event \(event)")
            let outcome = try await service.retry(eventID: event, user: AuditLog.currentUser)
            audit.note("now \(outcome.state.rawValue)")
            let view = MerchantTokenEventView(outcome)
            if output.json { try printJSON(view) } else { print(view.line) }
            guard outcome.state == .applied else {
                // Failed for good is a refusal; still pending means Apple (or the HSM) may answer later.
                let status: CommandFailure.Status = outcome.state == .failed ? .refused : .unavailable
                throw CommandFailure(status, "event \(event) was not applied: \(outcome.lastError ?? outcome.state.rawValue)")
            }
        }
    }
}

struct MerchantTokenUnlink: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unlink",
        abstract: "Ask Apple to unlink a merchant token, and make its high-value tokens unusable here at once.")

    @OptionGroup var token: MerchantTokenOptions

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await MerchantTokenAdmin(name: "merchant-tokens.unlink", mutates: true).run(hsm: hsmOptions) { service, _, audit in
            audit.note("merchant \(token.merchantID), merchant token \(token.tokenID)")
            let effect = try await service.unlink(
                merchantID: token.merchantID, merchantTokenID: token.tokenID, user: AuditLog.currentUser, organization: nil)
            audit.note(effect.summary)
            if output.json {
                try printJSON(["merchantTokenId": token.tokenID, "effect": effect.summary])
            } else {
                print("unlinked at Apple; here: \(effect.summary)")
            }
        }
    }
}

struct MerchantTokenUpdateURL: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update-url", abstract: "Change the URL Apple notifies about a merchant token (updateMerchantMetadata).")

    @OptionGroup var token: MerchantTokenOptions

    @Option(help: "The new tokenNotificationURL (https).")
    var url: String

    @OptionGroup var output: OutputOptions

    @OptionGroup var hsmOptions: HSMOptions

    func run() async throws {
        try await MerchantTokenAdmin(name: "merchant-tokens.update-url", mutates: true).run(hsm: hsmOptions) { service, _, audit in
            audit.note("merchant \(token.merchantID), merchant token \(token.tokenID)")
            try await service.updateNotificationURL(
                merchantID: token.merchantID, merchantTokenID: token.tokenID, url: url, user: AuditLog.currentUser, organization: nil)
            if output.json {
                try printJSON(["merchantTokenId": token.tokenID, "tokenNotificationURL": url])
            } else {
                print("Apple now notifies \(url) about merchant token \(token.tokenID)")
            }
        }
    }
}

/// The merchant token a call to Apple is about, and the merchant whose identity certificate makes it.
struct MerchantTokenOptions: ParsableArguments {
    @Option(name: .customLong("merchant-id"), help: "The merchant identifier whose identity certificate authenticates the call.")
    var merchantID: String

    @Option(name: .customLong("token-id"), help: "The merchant token identifier (merchantTokenIdentifier).")
    var tokenID: String
}
