import Foundation
import PaywardenPrimitives

/// A tpm2-pkcs11 token on a software TPM, as Debian ships them (libtpm2-pkcs11 1.9, swtpm 0.7,
/// tpm2-abrmd 3.0): swtpm listens on loopback, tpm2-abrmd is its resource manager on a private
/// D-Bus session bus (without one the TPM runs out of object slots), and `tpm2_ptool` makes the
/// token in a store directory. A real module with real gaps and rules: no ECDH, AES-GCM or key
/// wrap, no session objects, no private-key import, and public-key usages tied to the private key's.
public struct SoftwareTPMToken: Sendable {
    public let directory: String
    public let label: String
    public let pinFile: String
    let daemons: [DaemonProcess]
    let busAddress: String

    public static let modulePath = "/usr/lib/x86_64-linux-gnu/pkcs11/libtpm2_pkcs11.so"
    static let programs = [
        "/usr/bin/swtpm", "/usr/sbin/tpm2-abrmd", "/usr/bin/tpm2_ptool", "/usr/bin/tpm2_startup", "/usr/bin/tpm2_getrandom",
        "/usr/bin/dbus-daemon",
    ]

    /// Whether the module, the software TPM and its tools are installed (`make test` installs them).
    public static var isInstalled: Bool {
        FileManager.default.fileExists(atPath: modulePath) && programs.allSatisfy(FileManager.default.isExecutableFile(atPath:))
    }

    /// The environment tpm2-pkcs11 and the TPM tools read: the resource manager's bus, the store.
    var moduleEnvironment: [String: String] {
        [
            "DBUS_SESSION_BUS_ADDRESS": busAddress, "TPM2_PKCS11_TCTI": "tabrmd:bus_type=session",
            "TPM2TOOLS_TCTI": "tabrmd:bus_type=session", "TPM2_PKCS11_STORE": directory + "/store",
        ]
    }

    /// What an operator exports to use the token: the module, its environment, the token's label and PIN file.
    public var environment: [String: String] {
        moduleEnvironment.merging([
            "PAYWARDEN_PKCS11_MODULE": Self.modulePath, "PAYWARDEN_TOKEN_LABEL": label, "PAYWARDEN_PIN_FILE": pinFile,
        ]) { $1 }
    }

    /// Starts a software TPM and its resource manager and makes a token with a random PIN;
    /// everything is stopped and removed when the test ends.
    public static func make() async throws -> SoftwareTPMToken {
        let directory = NSTemporaryDirectory() + "paywarden-tpm-\(UUID().uuidString.prefix(8))"
        for child in ["state", "store"] {
            try FileManager.default.createDirectory(atPath: directory + "/" + child, withIntermediateDirectories: true)
        }
        TestResources.track(directory: directory)
        let (tpm, port) = try await startTPM(directory)
        let socket = directory + "/bus.sock"
        let bus = try DaemonProcess(
            "/usr/bin/dbus-daemon", ["--session", "--nofork", "--nopidfile", "--address=unix:path=\(socket)"],
            logPath: directory + "/dbus.log")
        try await bus.wait("the bus socket") { FileManager.default.fileExists(atPath: socket) }
        let busAddress = "unix:path=" + socket
        let resourceManager = try DaemonProcess(
            "/usr/sbin/tpm2-abrmd", ["--session", "--allow-root", "--tcti=swtpm:port=\(port)", "--flush-all"],
            environment: ProcessInfo.processInfo.environment.merging(["DBUS_SESSION_BUS_ADDRESS": busAddress]) { $1 },
            logPath: directory + "/abrmd.log")
        let label = "tpm-\(UUID().uuidString.prefix(8))"
        let pin = String(UUID().uuidString.prefix(12))
        let token = SoftwareTPMToken(
            directory: directory, label: label, pinFile: directory + "/\(label).pin", daemons: [resourceManager, bus, tpm],
            busAddress: busAddress)
        try await resourceManager.wait("the resource manager on the bus") {
            try Self.run("/usr/bin/tpm2_getrandom", ["4"], token.moduleEnvironment).status == 0
        }
        let store = directory + "/store"
        for arguments in [
            ["init", "--path=\(store)"],
            ["addtoken", "--pid=1", "--label=\(label)", "--userpin=\(pin)", "--sopin=so-\(pin)", "--path=\(store)"],
        ] {
            let made = try Self.run("/usr/bin/tpm2_ptool", arguments, token.moduleEnvironment)
            guard made.status == 0 else {
                throw DaemonProcess.DaemonFailure("tpm2_ptool \(arguments[0]) failed: \(made.stderr.suffix(1500))")
            }
        }
        try OwnerOnlyFile.write(Data(pin.utf8), to: token.pinFile)
        return token
    }

    /// swtpm on a free loopback port and the next (its control channel, where the TCTI looks for
    /// it), started up. A port taken meanwhile ends swtpm, and another pair is tried.
    private static func startTPM(_ directory: String) async throws -> (DaemonProcess, port: Int) {
        var failures: [String] = []
        for _ in 0..<5 {
            let port = try LoopbackPort.unused()
            guard port < 65_535 else { continue }
            let tpm = try DaemonProcess(
                "/usr/bin/swtpm",
                [
                    "socket", "--tpm2", "--tpmstate", "dir=\(directory)/state", "--server", "type=tcp,port=\(port),bindaddr=127.0.0.1",
                    "--ctrl", "type=tcp,port=\(port + 1),bindaddr=127.0.0.1", "--flags", "not-need-init",
                ], logPath: directory + "/swtpm.log")
            do {
                try await tpm.wait("TPM2_Startup", within: .seconds(5)) {
                    try Self.run("/usr/bin/tpm2_startup", ["-c"], ["TPM2TOOLS_TCTI": "swtpm:port=\(port)"]).status == 0
                }
                return (tpm, port)
            } catch {
                tpm.stop()
                failures.append("\(error)")
            }
        }
        throw DaemonProcess.DaemonFailure("no software TPM started: \(failures.joined(separator: "; "))")
    }

    /// Stops the resource manager, the bus and the TPM.
    public func stop() {
        for daemon in daemons { daemon.stop() }
    }

    private static func run(_ program: String, _ arguments: [String], _ environment: [String: String]) throws -> ChildProcess.Output {
        try ChildProcess.run(program, arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
    }
}
