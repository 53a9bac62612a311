"""Fill a Magnum database the way Magnum does, through Magnum's own objects
and its conductor's certificate code, and print what it made as JSON.

Run with Debian's python3 and Magnum: fill_magnum.py MAGNUM_CONF OUT_JSON.
With "adopt PROJECT_ID" after them it makes instead the two clusters whose
Cluster API objects the adoption test makes as magnum-cluster-api and
magnum-capi-helm would.
A Heat driver's template and cluster (project-heat), a Cluster API
driver's template and cluster (project-capi), a cluster whose CAs Magnum
keeps in Barbican, node groups and quotas.
"""
import json
import sys

import magnum.conf
from magnum.common import context as magnum_context
from magnum.conductor.handlers.common import cert_manager
from magnum import objects

CONF = magnum.conf.CONF
CONF(['--config-file', sys.argv[1]], project='magnum')

HEAT, CAPI = 'project-heat', 'project-capi'


def ctx(project, user):
    return magnum_context.make_context(project_id=project, user_id=user)


def template(context, **kw):
    fields = dict(coe='kubernetes', server_type='vm', tls_disabled=False, registry_enabled=False,
                  master_lb_enabled=False, floating_ip_enabled=True)
    fields.update(kw)
    t = objects.ClusterTemplate(context, project_id=context.project_id, user_id=context.user_id, **fields)
    t.create()
    return t


def cluster(context, tpl, nodegroups, certificates=True, **kw):
    c = objects.Cluster(context, project_id=context.project_id, user_id=context.user_id,
                        cluster_template_id=tpl.uuid, **kw)
    c.create()
    if certificates:
        # What magnum-conductor does when it creates a cluster.
        cert_manager.generate_certificates_to_cluster(c, context=context)
    else:
        base = 'https://barbican.example.net:9311/v1/containers/'
        c.ca_cert_ref = base + '2b6c4c44-4e5b-4a0e-9f0f-0d7a6b1f3a11'
        c.etcd_ca_cert_ref = base + '8d2f1a3e-9b6b-4d0e-8f55-3f1e2b7c9d22'
        c.front_proxy_ca_cert_ref = base + 'c4e7d9a1-2f3b-4c5d-8e6f-7a8b9c0d1e33'
    c.save()
    for ng in nodegroups:
        objects.NodeGroup(context, cluster_id=c.uuid, project_id=context.project_id, **ng).create()
    return c


def dump(obj):
    out = {}
    for k in obj.fields:
        if not obj.obj_attr_is_set(k):
            continue
        v = getattr(obj, k)
        if hasattr(v, 'isoformat'):
            v = v.isoformat()
        out[k] = v
    return out




def ca(c, context, kind=None):
    cert = cert_manager.get_cluster_ca_certificate(c, context=context, ca_cert_type=kind).get_certificate()
    return cert.decode() if isinstance(cert, bytes) else cert


def read_back(made, quotas):
    # Reads as an administrator of every project: a project's own reads
    # would ask Keystone for the trustee domain.
    admin = magnum_context.make_admin_context(all_tenants=True)
    out = {'templates': [dump(objects.ClusterTemplate.get_by_uuid(admin, t.uuid)) for t in made['templates']],
           'clusters': [], 'quotas': quotas}
    for c, certs in made['clusters']:
        c = objects.Cluster.get_by_uuid(admin, c.uuid)
        d = dump(c)
        d['nodegroups'] = [dump(ng) for ng in objects.NodeGroup.list(admin, c.uuid)]
        if certs:
            d['ca'] = {'kubernetes': ca(c, admin), 'etcd': ca(c, admin, 'etcd'),
                       'front-proxy': ca(c, admin, 'front-proxy')}
        out['clusters'].append(d)
    with open(sys.argv[2], 'w') as f:
        json.dump(out, f, indent=1, default=str)


def fill_adopted(project):
    """A template of a Cluster API driver and two clusters of it, named by
    the stack_ids their drivers give: magnum-cluster-api's "kube-" and five
    characters, magnum-capi-helm's release name."""
    context = ctx(project, 'user-carol')
    tpl = template(context, name='k8s-capi', image_id='ubuntu-2204-kube-v1.31.2', cluster_distro='ubuntu',
                   flavor_id='m1.small', master_flavor_id='m1.medium', external_network_id='public',
                   master_lb_enabled=True, labels={'kube_tag': 'v1.31.2'})
    made = {'templates': [tpl], 'clusters': []}
    for name, stack in (('mca', 'kube-ab12c'), ('mch', 'mch-a1b2c3d4e5f6')):
        c = cluster(context, tpl, [
            dict(name='default-master', role='master', node_count=1, is_default=True, flavor_id='m1.medium',
                 status='CREATE_COMPLETE', version='v1.31.2'),
            dict(name='default-worker', role='worker', node_count=2, is_default=True, flavor_id='m1.small',
                 status='CREATE_COMPLETE'),
        ], name=name, stack_id=stack, status='CREATE_COMPLETE', status_reason=None, coe_version='v1.31.2',
            master_flavor_id='m1.medium', flavor_id='m1.small', create_timeout=60,
            labels={'kube_tag': 'v1.31.2'}, master_lb_enabled=True)
        made['clusters'].append((c, True))
    read_back(made, [])


if len(sys.argv) > 4 and sys.argv[3] == 'adopt':
    fill_adopted(sys.argv[4])
    sys.exit(0)

heat, capi = ctx(HEAT, 'user-alice'), ctx(CAPI, 'user-bob')

fcos = template(heat, name='k8s-fcos-heat', image_id='fedora-coreos-35', cluster_distro='fedora-coreos',
                flavor_id='m1.medium', master_flavor_id='m1.large', keypair_id='ops-key',
                external_network_id='public', dns_nameserver='8.8.8.8', docker_volume_size=20,
                network_driver='calico', volume_driver='cinder', public=True, hidden=False,
                labels={'kube_tag': 'v1.21.1-rancher1', 'container_runtime': 'containerd',
                        'cloud_provider_enabled': 'true'})
ubuntu = template(capi, name='k8s-1.30-ubuntu', image_id='ubuntu-2204-kube-v1.30.4', cluster_distro='ubuntu',
                  flavor_id='m1.large', master_flavor_id='m1.large', keypair_id='dev-key',
                  external_network_id='public', public=False, hidden=True, master_lb_enabled=True,
                  labels={'kube_tag': 'v1.30.4', 'boot_volume_size': '40'})

prod = cluster(heat, fcos, [
    dict(name='default-master', role='master', node_count=3, is_default=True, flavor_id='m1.large',
         image_id='fedora-coreos-35', status='CREATE_COMPLETE', version='v1.21.1',
         node_addresses=['10.0.0.11', '10.0.0.12', '10.0.0.13']),
    dict(name='default-worker', role='worker', node_count=5, is_default=True, flavor_id='m1.medium',
         image_id='fedora-coreos-35', status='CREATE_COMPLETE', min_node_count=1, max_node_count=8),
    dict(name='gpu', role='worker', node_count=2, flavor_id='g1.xlarge', image_id='fedora-coreos-35',
         status='CREATE_COMPLETE', labels={'gpu': 'true'}),
], name='prod', keypair='ops-key', stack_id='9b2a6c0e-4d1f-4a3b-8c5d-6e7f8091a2b3', status='CREATE_COMPLETE',
    status_reason='Stack CREATE completed successfully', api_address='https://10.0.0.5:6443',
    coe_version='v1.21.1', container_version='1.4.4', master_flavor_id='m1.large', flavor_id='m1.medium',
    create_timeout=60, docker_volume_size=20, health_status='HEALTHY',
    health_status_reason={'api': 'ok'}, labels={'kube_tag': 'v1.21.1-rancher1', 'container_runtime': 'containerd',
                                                 'cloud_provider_enabled': 'true', 'auto_healing_enabled': 'true'},
    fixed_network='private', master_lb_enabled=False, floating_ip_enabled=True)

dev = cluster(capi, ubuntu, [
    dict(name='default-master', role='master', node_count=1, is_default=True, flavor_id='m1.large',
         status='UPDATE_COMPLETE', version='v1.30.4'),
    dict(name='default-worker', role='worker', node_count=2, is_default=True, flavor_id='m1.large',
         status='UPDATE_COMPLETE'),
], name='dev', keypair='dev-key', stack_id='dev-ab12c', status='UPDATE_COMPLETE',
    status_reason=None, api_address='https://203.0.113.7:6443', coe_version='v1.30.4',
    master_flavor_id='m1.large', flavor_id='m1.large', create_timeout=60, health_status='HEALTHY',
    labels={'kube_tag': 'v1.30.4', 'boot_volume_size': '40'}, master_lb_enabled=True)

legacy = cluster(heat, fcos, [
    dict(name='default-master', role='master', node_count=1, is_default=True, status='CREATE_FAILED'),
    dict(name='default-worker', role='worker', node_count=1, is_default=True, status='CREATE_FAILED'),
], certificates=False, name='legacy', stack_id='1c3e5a7b-9d0f-4b2d-8e6f-a1b2c3d4e5f6', status='CREATE_FAILED',
    status_reason='Resource CREATE failed: ResourceInError', create_timeout=60, labels={})

objects.Quota(heat, project_id=HEAT, resource='Cluster', hard_limit=10).create()
objects.Quota(capi, project_id=CAPI, resource='Cluster', hard_limit=3).create()


read_back({'templates': [fcos, ubuntu], 'clusters': [(prod, True), (dev, True), (legacy, False)]},
          [{'project_id': HEAT, 'hard_limit': 10}, {'project_id': CAPI, 'hard_limit': 3}])
