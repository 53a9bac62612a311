// Package mgmt is Magnetite's client of the management cluster, where Cluster
// API runs. It loads the kubeconfig named in the configuration (and says
// loudly when that file is readable by others), discovers the version at
// which the management cluster serves each kind Magnetite uses (Cluster API
// moves kinds from v1beta1 to v1beta2 release by release; a per-kind override
// in the configuration wins), applies objects with server-side apply under the
// "magnetite" field manager, labels everything it creates with the cluster and
// project it belongs to, keeps one namespace per project, and delivers watch
// events for Magnetite's objects from shared informers.
//
// The kinds it knows are a table (package kinds): its own BaseKinds (core,
// apps, RBAC, Cluster API's core, kubeadm and addons kinds, and the host
// inventory's BareMetalHost) and the infrastructures' kinds, which the
// caller passes in Options.Kinds (cmd/magnetite passes those of the driver
// registry). The table says which kinds the conductor watches and which it
// cleans up after a cluster; a kind outside it is refused. mgmt imports no
// driver.
package mgmt
