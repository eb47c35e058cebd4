import Foundation

/// A SoftHSM token behind p11-kit's remoting, as Debian ships it (p11-kit 0.24): `p11-kit server`
/// exports the token on a unix socket and Paywarden loads `p11-kit-client.so`, so every call
/// crosses a socket, as with a network HSM's client library. The 0.24 client forwards mechanism
/// parameters for RSA-OAEP and RSA-PSS only: ECDH, AES-GCM and AES key wrap are
/// `CKR_MECHANISM_INVALID` through it, a real module with real gaps.
public struct P11KitRemotedToken: Sendable {
    /// The token behind the server.
    public let token: TestToken
    public let server: DaemonProcess
    /// `P11_KIT_SERVER_ADDRESS` for the client module.
    public let address: String

    /// Debian's p11-kit command and client module.
    public static let executable = "/usr/bin/p11-kit"
    public static let clientModulePath = "/usr/lib/x86_64-linux-gnu/pkcs11/p11-kit-client.so"

    /// Whether p11-kit's server and client are installed (`make test` installs them).
    public static var isInstalled: Bool {
        FileManager.default.isExecutableFile(atPath: executable) && FileManager.default.fileExists(atPath: clientModulePath)
    }

    /// Starts `p11-kit server` in front of `token` (a SoftHSM one) and waits for its socket.
    public static func start(_ token: TestToken) async throws -> P11KitRemotedToken {
        precondition(token.backend == .softHSM, "p11-kit remoting is set up in front of SoftHSM")
        let socket = token.directory + "/p11kit-\(token.label).sock"
        var environment = ProcessInfo.processInfo.environment
        environment.merge(token.environment) { $1 }
        let server = try DaemonProcess(
            executable,
            ["server", "-f", "-n", socket, "--provider", TestToken.softHSMModulePath, "pkcs11:token=\(token.label)"],
            environment: environment, logPath: token.directory + "/p11kit-\(token.label).log")
        try await server.wait("the socket \(socket)") { FileManager.default.fileExists(atPath: socket) }
        return P11KitRemotedToken(token: token, server: server, address: "unix:path=" + socket)
    }

    /// What an operator exports to use the token through the client: the client module, the
    /// server's address, and the token's label and PIN file as behind it.
    public var environment: [String: String] {
        [
            "PAYWARDEN_PKCS11_MODULE": Self.clientModulePath, "P11_KIT_SERVER_ADDRESS": address,
            "PAYWARDEN_TOKEN_LABEL": token.label, "PAYWARDEN_PIN_FILE": token.pinFile,
            // RSA_v1 through SoftHSM, which lacks OAEP-SHA256, needs software OAEP decoding, as directly.
            "PAYWARDEN_HSM_ALLOW_SOFTWARE_OAEP": "true",
        ]
    }
}
