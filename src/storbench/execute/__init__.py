"""Executors: run a case's fio jobs and judge the outcome, on this machine (`local`), on many fio servers
(`hosts`) or in Kubernetes pods (`kubernetes`), all behind one interface (`base.Executor`), fio started by one
supervisor (`supervisor`); `fake` replays stored outputs for tests."""
