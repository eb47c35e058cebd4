import NIOCore
import PaywardenServices
import Synchronization

/// Open connections per client address on one listener, so that one client (512 idle kept-alive
/// connections, say) cannot hold every slot of the listener's cap. Trusted reverse proxies are
/// exempt: every client behind them shares their address. Addresses are counted as the rate
/// limits count them (an IPv4 address, an IPv6 /64).
final class ConnectionsPerClient: Sendable {
    let limit: Int
    let clients: ClientAddressResolver
    private let open = Mutex<[String: Int]>([:])

    init(limit: Int, clients: ClientAddressResolver) {
        self.limit = limit
        self.clients = clients
    }

    /// Counts a new connection from `peer`: `.counted` with the key to give back on close,
    /// `.refused` when the client is at its limit; an exempt or unknown peer is admitted uncounted.
    func admit(_ peer: SocketAddress?) -> Admission {
        guard let address = IPAddressBlock.addressBytes(peer) else { return .uncounted }
        if clients.isTrustedProxy(address) { return .uncounted }
        let key = ClientAddressResolver.limitKey(address)
        return open.withLock { open in
            let count = open[key, default: 0]
            guard count < limit else { return .refused }
            open[key] = count + 1
            return .counted(key)
        }
    }

    func closed(_ key: String) {
        open.withLock { open in
            guard let count = open[key] else { return }
            open[key] = count > 1 ? count - 1 : nil
        }
    }

    enum Admission: Equatable {
        case counted(String)
        case uncounted
        case refused
    }
}
