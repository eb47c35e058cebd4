import Foundation

/// A fixed set of worker threads, each owning one PKCS#11 session, fed from a bounded queue.
///
/// Sessions are never shared between threads. PKCS#11 calls block, so they run here and not on
/// the cooperative pool. When the queue is full, work is refused at once with an `overloaded`
/// error rather than queued without bound. ``exclusive(_:)`` drains the workers and runs
/// maintenance (module recycling, re-login) while new work waits in the queue.
///
/// The pool is also a `TaskExecutor`: a task that prefers it (`withTaskExecutorPreference`)
/// runs its code on the workers, and its HSM calls then run inline on the worker's session,
/// with no thread hop on the way in or out.
final class SessionPool: TaskExecutor, @unchecked Sendable {
    /// Work for a worker, given the worker's context.
    typealias Operation = (WorkerContext) -> Void

    private enum WorkItem {
        case operation(Operation)
        case task(UnownedJob)
    }

    private let condition = NSCondition()
    private var queue: [WorkItem] = []
    private var queueHead = 0
    private var running = 0
    private var paused = false
    private var stopped = false
    private var generation = 0
    private var liveWorkers = 0
    /// Tasks admitted to run on the workers (``admitted(_:)``) and not yet finished.
    private var admittedTasks = 0
    /// Every worker's context, for maintenance to end their sessions while they are parked.
    private var contexts: [WorkerContext] = []

    let workerCount: Int
    let maxPending: Int
    let openSession: @Sendable () throws(PKCS11Error) -> Session

    /// - Parameter openSession: opens a session for the calling worker thread.
    init(workers: Int, maxPending: Int, openSession: @escaping @Sendable () throws(PKCS11Error) -> Session) {
        self.workerCount = max(1, workers)
        self.maxPending = max(1, maxPending)
        self.openSession = openSession
        liveWorkers = workerCount
        for index in 0..<workerCount {
            let thread = Thread { [self] in workerLoop() }
            thread.name = "pkcs11-worker-\(index)"
            thread.start()
        }
    }

    /// Operations and tasks queued and not yet started, and admitted tasks not yet finished.
    var pending: Int {
        condition.lock()
        defer { condition.unlock() }
        return queue.count - queueHead + admittedTasks
    }

    /// Runs `body` with a worker's session on that worker's thread: inline when the caller is
    /// already on a worker of this pool, otherwise through the queue.
    ///
    /// - Parameter deadline: how long the caller waits, queued and running. When it passes, the
    ///   caller gets a `timedOut` error; a job that has not started by then never runs, and one
    ///   that is running (an HSM call that stopped answering) is left to finish on its worker,
    ///   its result discarded. Inline calls run on the caller's own thread and cannot be left:
    ///   their deadline is the caller's (``HSM/runOnWorkers(_:)``).
    func run<R: Sendable>(
        deadline: Duration? = nil, _ body: @escaping @Sendable (Session) throws(PKCS11Error) -> R
    ) async throws(PKCS11Error) -> R {
        if let context = WorkerContext.current, context.pool === self {
            return try context.withSession(body)
        }
        let pending = PendingRun<R>()
        do {
            return try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<R, any Error>) in
                pending.continuation = continuation
                let operation: Operation = { context in
                    guard pending.start() else { return }  // the caller gave up before it started
                    do throws(PKCS11Error) {
                        pending.finish(.success(try context.withSession(body)))
                    } catch {
                        pending.finish(.failure(error))
                    }
                }
                if let refusal = enqueue(.operation(operation), bounded: true) {
                    pending.finish(.failure(refusal))
                } else if let deadline {
                    pending.expire(after: deadline)
                }
            }
        } catch let error as PKCS11Error {
            throw error
        } catch {
            throw PKCS11Error(code: .poolStopped, category: .retry, message: "unexpected error \(error)")
        }
    }

    /// Counts `body` among the operations waiting for the workers while it runs, refusing it as
    /// overloaded when ``maxPending`` are already waiting. Tasks that prefer the pool as their
    /// executor are admitted through here: once admitted, their jobs are never refused.
    func admitted<R>(_ body: () async throws -> R) async throws -> R {
        if let refusal = admitTask() { throw refusal }
        defer { finishTask() }
        return try await body()
    }

    private func admitTask() -> PKCS11Error? {
        condition.withLock {
            guard admittedTasks + queue.count - queueHead < maxPending else { return .overloaded(maxPending) }
            admittedTasks += 1
            return nil
        }
    }

    private func finishTask() {
        condition.withLock { admittedTasks -= 1 }
    }

    /// Accepts a task job from the Swift runtime. Tasks are never refused: the bound applies to
    /// new HSM operations, and a task already running must be allowed to finish.
    func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        if enqueue(.task(unowned), bounded: false) != nil {
            // Shut down: no worker will take it, but a task must always run to completion.
            let thread = Thread { [self] in unowned.runSynchronously(on: asUnownedTaskExecutor()) }
            thread.start()
        }
    }

    /// Waits until no worker is running anything, runs `body` on a dedicated thread while the
    /// workers stay parked, then lets them go on with fresh sessions (old handles may be invalid).
    func exclusive<R: Sendable>(_ body: @escaping @Sendable () throws -> R) async throws -> R {
        try await DedicatedThread.run(name: "pkcs11-maintenance") { [self] in
            condition.lock()
            while paused { condition.wait() }
            paused = true
            while running > 0 { condition.wait() }
            condition.unlock()
            defer {
                condition.lock()
                generation += 1
                paused = false
                condition.broadcast()
                condition.unlock()
            }
            return try body()
        }
    }

    /// Ends every worker's session; only from inside ``exclusive(_:)``, while the workers are
    /// parked (the pool's lock orders this before their next job). Sessions of a module that
    /// was re-initialised are forgotten (their handles may now name nothing, or a session opened
    /// since); otherwise they are closed, with the session objects (key copies) they hold.
    func endWorkerSessions(moduleRestarted: Bool) {
        condition.lock()
        let contexts = self.contexts
        condition.unlock()
        for context in contexts { context.endSession(closing: !moduleRestarted) }
    }

    /// Stops the workers after the queue drains. Sessions are closed by their threads.
    func shutdown() {
        condition.lock()
        stopped = true
        condition.broadcast()
        while liveWorkers > 0 { condition.wait() }
        condition.unlock()
    }

    private func enqueue(_ item: WorkItem, bounded: Bool) -> PKCS11Error? {
        condition.lock()
        defer { condition.unlock() }
        if stopped {
            return PKCS11Error(code: .poolStopped, category: .retry, message: "the HSM session pool is shut down")
        }
        if bounded && admittedTasks + queue.count - queueHead >= maxPending { return .overloaded(maxPending) }
        queue.append(item)
        condition.signal()
        return nil
    }

    private func workerLoop() {
        let context = WorkerContext(pool: self)
        condition.lock()
        contexts.append(context)
        condition.unlock()
        WorkerContext.bind(context) {
            condition.lock()
            while true {
                // Maintenance holds the workers even during shutdown: no session runs beside
                // a C_Finalize.
                while paused || (!stopped && queueHead == queue.count) { condition.wait() }
                if stopped && queueHead == queue.count { break }
                let item = queue[queueHead]
                queueHead += 1
                if queueHead >= 1024 && queueHead * 2 >= queue.count {
                    queue.removeFirst(queueHead)
                    queueHead = 0
                }
                running += 1
                context.generation = generation
                condition.unlock()

                switch item {
                case .operation(let operation): operation(context)
                case .task(let job): job.runSynchronously(on: asUnownedTaskExecutor())
                }

                condition.lock()
                running -= 1
                if running == 0 && paused { condition.broadcast() }
            }
            condition.unlock()
            // Close the session before reporting this worker gone: shutdown's caller finalizes
            // the module next, and a C_CloseSession racing C_Finalize can crash the module.
            context.close()
            condition.lock()
            liveWorkers -= 1
            condition.broadcast()
            condition.unlock()
        }
    }
}
