import Foundation
import PaywardenConfiguration
import PaywardenSandbox
import PaywardenTesting

/// `paywarden-tour [--backend softhsm|nss] [--paywarden PATH]` (`make try`): a guided tour of the
/// service on the development token's sandbox. Run with the development token's env sourced,
/// after `paywarden dev-hsm sandbox`. It starts the stand-ins for Apple and the processor on the
/// sandbox's ports, uses the service at `PAYWARDEN_LISTEN` or starts one (and stops it), walks
/// every step, and exits 1 at the first answer that is not the documented one.
@main
enum PaywardenTourCommand {
    static func main() async {
        do {
            let started = Date()
            let count = try await run(Array(CommandLine.arguments.dropFirst()))
            print(String(format: "\nThe tour passed: %d steps in %.1f s.", count, Date().timeIntervalSince(started)))
        } catch {
            FileHandle.standardError.write(Data("\npaywarden-tour: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run(_ arguments: [String]) async throws -> Int {
        var backend = "softhsm"
        var paywarden = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("paywarden").path
        var rest = arguments[...]
        while let option = rest.popFirst() {
            switch option {
            case "--backend": backend = rest.popFirst() ?? ""
            case "--paywarden": paywarden = rest.popFirst() ?? ""
            default: throw TourFailure("usage: paywarden-tour [--backend softhsm|nss] [--paywarden PATH]")
            }
        }
        let settings = try await PaywardenSettings.load()
        let layout = Sandbox.Layout(tokenDirectory: settings.home + "/" + backend)
        guard let sandbox = try layout.load() else {
            throw TourFailure("no sandbox in \(layout.directory); run `paywarden dev-hsm sandbox` first (make try does)")
        }
        guard settings.verification.trustRoots == [DevelopmentPKI.rootFile(in: layout.pkiDirectory)] else {
            throw TourFailure("the environment is not the sandbox's; source \(settings.home)/\(backend)/env first (make try does)")
        }
        let pki = try DevelopmentPKI.load(from: layout.pkiDirectory)
        let work = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: work) }

        // The stand-ins first: a service started with these settings expects them there.
        let processor: ProcessorUpstreamStandIn
        let apple: AppleGatewayStandIn
        do {
            processor = try await ProcessorUpstreamStandIn.start(port: sandbox.processorPort, pki: pki)
            apple = try await AppleGatewayStandIn.start(clientCA: pki.merchantCA.certificate, port: sandbox.appleGatewayPort, pki: pki)
        } catch {
            throw TourFailure(
                "the stand-ins cannot listen on the sandbox's ports \(sandbox.processorPort) and \(sandbox.appleGatewayPort) (\(error)): "
                    + "another program has one. Delete \(layout.descriptionFile), run `paywarden dev-hsm sandbox` (make try does) to "
                    + "pick new ones, and restart a running `make run`")
        }
        print(
            "Stand-ins: Apple's gateway at https://localhost:\(sandbox.appleGatewayPort), "
                + "a cnpAPI processor at https://localhost:\(sandbox.processorPort).")
        let service = try await TourService.findOrStart(
            listen: "\(settings.server.listen.host):\(settings.server.listen.port)", paywarden: paywarden, workDirectory: work)
        defer { service.stop() }
        let tour = Tour(
            http: service.http, paywarden: paywarden, decryptKey: try key(layout.directory + "/../dev-api-key"),
            merchantKey: try key(layout.apiKeyFile), processor: processor, apple: apple)
        for (index, step) in Tour.steps.enumerated() {
            print("\n== \(index + 1). \(step.title)")
            do {
                try await step.run(tour)
            } catch {
                if let tail = service.logTail { FileHandle.standardError.write(Data("the service's log ends with:\n\(tail)\n".utf8)) }
                // A service found running may predate the sandbox: it would not trust the sandbox's PKI.
                let hint =
                    service.startedByTour
                    ? "" : " (the service was already running: if it started before the sandbox existed, restart it with `make run`)"
                throw TourFailure("step \(index + 1) (\(step.title)) failed: \(error)\(hint)")
            }
        }
        try? await processor.stop()
        try? await apple.stop()
        return Tour.steps.count
    }

    static func key(_ path: String) throws -> String {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw TourFailure("cannot read the API key in \(path); run `paywarden dev-hsm init` and `paywarden dev-hsm sandbox`")
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "paywarden-tour-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        return path
    }
}
