/**
 * Kerberos principal names as ZooKeeper's KerberosName reads them, for the `sasl` ACL scheme (which
 * ids are valid) and for the id a SASL authentication gives its connection (SaslServerCallbackHandler
 * .handleAuthorizeCallback with zookeeper.kerberos.removeHostFromPrincipal / removeRealmFromPrincipal).
 * Pure.
 */

/** `service[/host]@REALM`, or a simple name without either. */
export interface KerberosName {
  serviceName: string;
  hostName: string | undefined;
  realm: string | undefined;
}

/** KerberosName's nameParser, matched against the whole name. */
const NAME = /^([^/@]*)(\/([^/@]*))?@([^/@]*)$/;

/** undefined where KerberosName throws: a name with an `@` that is not `service[/host]@REALM`. */
export function parseKerberosName(name: string): KerberosName | undefined {
  const match = NAME.exec(name);
  if (match) return { serviceName: match[1]!, hostName: match[3], realm: match[4] };
  return name.includes("@") ? undefined : { serviceName: name, hostName: undefined, realm: undefined };
}

export interface PrincipalRules {
  /** zookeeper.kerberos.removeHostFromPrincipal */
  removeHostFromPrincipal: boolean;
  /** zookeeper.kerberos.removeRealmFromPrincipal */
  removeRealmFromPrincipal: boolean;
  /** The Kerberos configuration's default_realm ("" when there is none), which the DEFAULT mapping rule needs. */
  defaultRealm: string;
}

/**
 * The id of a `sasl` authentication: the authenticated principal's short name (ZooKeeper's only
 * auth_to_local rule, DEFAULT: the first component of a principal of the default realm), then
 * `/host` and `@REALM` unless the rules remove them. A principal of another realm has no short
 * name: ZooKeeper then keeps the SASL mechanism's authorization id, and so does this. undefined
 * for a name KerberosName refuses (ZooKeeper's authorization callback throws: no id is given).
 */
export function saslAuthorizedId(authenticationId: string, authorizationId: string, rules: PrincipalRules): string | undefined {
  const name = parseKerberosName(authenticationId);
  if (name === undefined) return undefined;
  const simple = name.hostName === undefined && name.realm === undefined;
  if (!simple && name.realm !== rules.defaultRealm) return authorizationId;
  let id = name.serviceName;
  if (!rules.removeHostFromPrincipal && name.hostName !== undefined) id += `/${name.hostName}`;
  if (!rules.removeRealmFromPrincipal && name.realm !== undefined) id += `@${name.realm}`;
  return id;
}
