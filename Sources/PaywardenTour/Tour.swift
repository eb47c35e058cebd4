import Foundation
import PaywardenSandbox
import PaywardenTesting
import Synchronization

/// The tour's steps: every capability of the service on the sandbox merchant, each request
/// printed with the answer that matters, each answer checked against the documented one.
struct Tour: Sendable {
    let http: TourHTTP
    let paywarden: String
    /// The development API key (scope decrypt) and the sandbox merchant server's (redeem, detokenize, merchant-tokens).
    let decryptKey: String
    let merchantKey: String
    let processor: ProcessorUpstreamStandIn
    let apple: AppleGatewayStandIn

    /// A card the vault has not seen: the tour can run again and again on one database.
    let card = SampleToken.randomAccountNumber()
    /// The card's high-value token from step 4, which step 5 must get again.
    let firstToken = IssuedToken()

    final class IssuedToken: Sendable {
        private let token = Mutex<String?>(nil)
        var value: String? { token.withLock { $0 } }
        func set(_ value: String) { token.withLock { $0 = value } }
    }

    typealias Step = (title: String, run: @Sendable (Tour) async throws -> Void)

    static let steps: [Step] = [
        ("Decrypt an EC_v1 token (the app's PKPaymentToken, decrypted with the merchant key in the HSM)", { try await $0.decryptEC() }),
        ("Decrypt an RSA_v1 token", { try await $0.decryptRSA() }),
        ("Send the same token again: a replay is refused", { try await $0.replay() }),
        ("Register a card through eProtect, redeem it, detokenize the high-value token", { try await $0.vaultFlow() }),
        ("The same card again: the same high-value token, response 802", { try await $0.sameCardAgain() }),
        ("A cnpAPI authorization relayed to the processor with the card data substituted", { try await $0.relayedAuthorization() }),
        ("Apple unlinks a merchant token: its high-value token stops working", { try await $0.merchantTokenUnlink() }),
        ("The operator's view: hsm status, keys list, vault status", { try await $0.operatorCommands() }),
    ]

    // MARK: Decryption

    func decryptEC() async throws {
        let token = try sampleToken(pan: card)
        let reply = try await http.send(.POST, "/v1/payment-tokens/decrypt", body: token, apiKey: decryptKey, who: "the development key")
        let payment = reply.json["paymentData"] as? [String: Any]
        let number = payment?["applicationPrimaryAccountNumber"] as? String
        try TourFailure.unless(reply.status == 200 && number == card, "expected 200 with the card's account number, got \(reply.summary)")
        reply.print(
            "\(payment?["paymentDataType"] as? String ?? "?") payment, account number \(masked(card)), cryptogram present: "
                + "\((payment?["paymentData"] as? [String: Any])?["onlinePaymentCryptogram"] != nil)")
    }

    func decryptRSA() async throws {
        let token = try sampleToken(pan: card, rsa: true)
        let reply = try await http.send(.POST, "/v1/payment-tokens/decrypt", body: token, apiKey: decryptKey, who: "the development key")
        let version = ((try? JSONSerialization.jsonObject(with: Data(token))) as? [String: Any])
            .flatMap { ($0["paymentData"] as? [String: Any])?["version"] as? String }
        let number = (reply.json["paymentData"] as? [String: Any])?["applicationPrimaryAccountNumber"] as? String
        try TourFailure.unless(reply.status == 200 && number == card, "expected 200 with the card's account number, got \(reply.summary)")
        reply.print("\(version ?? "?") token decrypted, account number \(masked(card))")
    }

    func replay() async throws {
        let token = try sampleToken(pan: card)
        let first = try await http.send(.POST, "/v1/payment-tokens/decrypt", body: token, apiKey: decryptKey, who: "the development key")
        try TourFailure.unless(first.status == 200, "the first decryption: expected 200, got \(first.summary)")
        first.print("decrypted")
        let again = try await http.send(.POST, "/v1/payment-tokens/decrypt", body: token, apiKey: decryptKey, who: "the same token again")
        try TourFailure.unless(again.errorCode == "replayed_transaction", "expected replayed_transaction, got \(again.summary)")
        again.print("error \(again.errorCode ?? "")")
    }

    // MARK: The vault

    func vaultFlow() async throws {
        let id = try await register(try sampleToken(pan: card))
        let (token, code) = try await redeem(id)
        firstToken.set(token)
        try TourFailure.unless(code == "801", "expected a new high-value token (801), got \(code)")
        let reply = try await http.send(
            .POST, "/v1/tokens/\(token)/detokenize", shown: "/v1/tokens/\(masked(token))/detokenize", apiKey: merchantKey,
            who: "the merchant's server")
        try TourFailure.unless(
            reply.status == 200 && reply.json["accountNumber"] as? String == card,
            "expected 200 with the card's account number, got \(reply.summary)")
        reply.print("account number \(masked(card)), kind \(reply.json["kind"] as? String ?? "?")")
    }

    func sameCardAgain() async throws {
        let id = try await register(try sampleToken(pan: card))
        let (token, code) = try await redeem(id)
        try TourFailure.unless(code == "802", "expected 802 (the card already has a token), got \(code)")
        try TourFailure.unless(token == firstToken.value, "expected the high-value token of step 4 again, got another")
    }

    /// eProtect as the app posts it: no API key, the paypage id in the form. Returns the registration ID.
    func register(_ token: [UInt8]) async throws -> String {
        let form = try EProtectForms.form(token: token, paypageID: Sandbox.paypageID, reportGroup: "tour")
        let reply = try await http.send(
            .POST, "/eProtect/paypage", body: form, contentType: "application/x-www-form-urlencoded", who: "the app, no API key")
        let id = reply.json["paypageRegistrationId"] as? String
        try TourFailure.unless(
            reply.status == 200 && reply.json["response"] as? String == "870" && id != nil,
            "expected response 870, got \(reply.summary) response \(reply.json["response"] as? String ?? "none")")
        reply.print("response 870, a registration ID (\(id?.count ?? 0) characters, valid 24 hours)")
        return id ?? ""
    }

    /// The merchant's server redeems a registration ID: the high-value token and its response code.
    func redeem(_ id: String) async throws -> (token: String, responseCode: String) {
        let reply = try await http.send(
            .POST, "/v1/registrations/\(id)/redeem", shown: "/v1/registrations/\(masked(id))/redeem", apiKey: merchantKey,
            who: "the merchant's server")
        let highValue = reply.json["highValueToken"] as? [String: Any]
        let token = highValue?["token"] as? String ?? ""
        let code = highValue?["responseCode"] as? String ?? ""
        try TourFailure.unless(reply.status == 200 && !token.isEmpty, "expected 200 with a high-value token, got \(reply.summary)")
        reply.print("card data for the authorization, and high-value token \(masked(token)) (response \(code))")
        return (token, code)
    }

    // MARK: Relays and merchant tokens

    func relayedAuthorization() async throws {
        let id = try await register(try sampleToken(pan: card))
        processor.clearReceived()
        let message = """
            <?xml version="1.0" encoding="UTF-8"?>
            <cnpOnlineRequest version="12.10" xmlns="http://www.vantivcnp.com/schema" merchantId="\(Sandbox.cnpMerchantID)">\
            <authentication><user>sandbox-server</user><password>\(merchantKey)</password></authentication>\
            <authorization id="a1" reportGroup="tour" customerId="c1"><orderId>tour-1</orderId><amount>1999</amount>\
            <orderSource>applepay</orderSource><paypage><paypageRegistrationId>\(id)</paypageRegistrationId></paypage>\
            </authorization></cnpOnlineRequest>
            """
        let reply = try await http.send(
            .POST, "/vap/communicator/online", body: Array(message.utf8), contentType: "text/xml",
            who: "the merchant's server, cnpAPI with the registration ID")
        let received = processor.received.first
        try TourFailure.unless(received != nil, "the processor stand-in received nothing; reply \(reply.summary)")
        try TourFailure.unless(
            received?.accountNumber == card && received?.cryptogram != nil && received?.text.contains(id) == false,
            "the processor should get the card's account number and cryptogram and no registration ID")
        print("  ⇢ the processor received an authorization for \(masked(card)) with its cryptogram, and no registration ID")
        let response = element("response", in: reply.text)
        let token = element("cnpToken", in: reply.text) ?? ""
        try TourFailure.unless(
            reply.status == 200 && response == "000" && !token.isEmpty,
            "expected response 000 and a cnpToken, got \(reply.status) response \(response ?? "none")")
        try TourFailure.unless(
            !reply.text.contains(card) && !reply.text.contains(id), "the reply must carry no account number or registration ID")
        reply.print("authorizationResponse 000 (approved), cnpToken \(masked(token)); no card data, no registration ID")
    }

    func merchantTokenUnlink() async throws {
        let merchantTokenID = "DNITHE" + String(SampleToken.randomAccountNumber().prefix(16)) + "01"
        let pan = SampleToken.randomAccountNumber()
        let id = try await register(try sampleToken(pan: pan, merchantToken: merchantTokenID))
        let (token, _) = try await redeem(id)
        let event = "tour-\(UUID().uuidString.prefix(8).lowercased())"
        apple.setEvent(event, merchantID: Sandbox.merchantID, .event(type: "UNLINK", merchantTokenID: merchantTokenID))
        print("  ⇢ Apple (the stand-in) has an UNLINK event \(event) for the merchant token")
        let notified = try await http.send(
            .GET, "/v1/apple-pay/\(Sandbox.merchantID)/notification/merchantToken/\(event)", who: "Apple's notification, from loopback")
        try TourFailure.unless(notified.status == 200, "expected 200 for the notification, got \(notified.summary)")
        notified.print("notification accepted; the service fetches the event from Apple over mutual TLS with the identity key")
        let deadline = Date().addingTimeInterval(20)
        var last: TourHTTP.Reply?
        while Date() < deadline {
            let reply = try await http.send(
                .POST, "/v1/tokens/\(token)/detokenize", shown: "/v1/tokens/\(masked(token))/detokenize", apiKey: merchantKey,
                who: "the merchant's server")
            last = reply
            if reply.status != 200 { break }
            print("  ← 200  not applied yet")
            try await Task.sleep(for: .milliseconds(250))
        }
        try TourFailure.unless(
            last?.errorCode == "token_unlinked", "expected token_unlinked within 20 s, got \(last?.summary ?? "no answer")")
        last!.print("error token_unlinked: the high-value token is unusable")
        let fetched = apple.requests.contains { $0.path.hasSuffix("/merchantToken/event/\(event)") }
        try TourFailure.unless(fetched, "Apple's stand-in saw no fetch of the event")
    }

    // MARK: The CLI

    func operatorCommands() async throws {
        for arguments in [["hsm", "status"], ["keys", "list"], ["vault", "status"]] {
            let output = try cli(arguments)
            try TourFailure.unless(
                output.status == 0, "`paywarden \(arguments.joined(separator: " "))` exited \(output.status): \(output.stderr)")
            for line in output.stdout.split(separator: "\n") { print("    \(line)") }
        }
    }

    // MARK: Helpers

    /// `paywarden dev-hsm sample-token …`, printed as a command.
    func sampleToken(pan: String, rsa: Bool = false, merchantToken: String? = nil) throws -> [UInt8] {
        var arguments = ["dev-hsm", "sample-token", "--merchant-id", Sandbox.merchantID, "--pan", pan]
        if rsa { arguments.append("--rsa") }
        if let merchantToken { arguments += ["--merchant-token", merchantToken] }
        let output = try cli(arguments, printing: arguments.map { $0 == pan ? masked(pan) : $0 })
        try TourFailure.unless(output.status == 0 && output.stdout.hasPrefix("{"), "sample-token failed: \(output.stderr)")
        return Array(output.stdout.utf8)
    }

    func cli(_ arguments: [String], printing shown: [String]? = nil) throws -> ChildProcess.Output {
        print("  $ paywarden \((shown ?? arguments).joined(separator: " "))")
        return try ChildProcess.run(paywarden, arguments)
    }

    /// The last four characters only, as anything card-like is shown.
    func masked(_ value: String) -> String { "…" + value.suffix(4) }

    func element(_ name: String, in xml: String) -> String? {
        guard let start = xml.range(of: "<\(name)>"), let end = xml.range(of: "</\(name)>", range: start.upperBound..<xml.endIndex) else {
            return nil
        }
        return String(xml[start.upperBound..<end.lowerBound])
    }
}
