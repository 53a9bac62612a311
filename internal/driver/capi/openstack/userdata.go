package openstack

// NovaUserDataLimit is the longest user_data Nova's API takes when it
// creates a server: a base64 string of at most 65535 characters (the
// server create schema's user_data, maxLength 65535, in
// nova/api/openstack/compute/schemas/servers.py). Nova answers 400
// "Invalid input for field/attribute user_data" beyond it; CAPO sends the
// bootstrap data there, for VMs and Ironic nodes alike.
const NovaUserDataLimit = 65535

// UserDataLimit implements capi.UserDataLimit.
func (Infrastructure) UserDataLimit() (int, string) { return NovaUserDataLimit, "Nova" }
