import ArgumentParser
import Foundation
import Logging
import PaywardenAdmin
import PaywardenConfiguration
import PaywardenServer
import PaywardenServices

struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the HTTP service: POST /v1/payment-tokens/decrypt, /healthz, /readyz, /metrics.",
        discussion: """
            Configured by the environment and an optional JSON file ({"paywarden": {"listen": "…", …}}); the \
            environment overrides the file. `paywarden config show` prints every setting, its effective value and \
            where it came from. Stops on SIGTERM or SIGINT after finishing in-flight requests.
            """
    )

    @Option(help: "A JSON configuration file (default: \(SettingCatalog.configurationFileVariable)).")
    var config: String?

    func run() async throws {
        do {
            let settings = try await PaywardenSettings.load(file: config)
            // With tracing on, each line carries the active span's trace and span ids.
            CommandLogging.bootstrap(
                settings, defaultLevel: .info,
                metadataProvider: settings.tracingEnabled ? TracingBootstrap.loggingMetadataProvider : nil)
            let server = try await PaywardenServer.make(ServerConfiguration(settings: settings), logger: Logger(label: "paywarden"))
            try await server.run()
        } catch {
            let failure = CommandFailure(describing: error)
            failure.report()
            throw failure.exitCode
        }
    }
}
