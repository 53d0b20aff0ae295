/** The oidc-provider package ships no types; the tests use a few of its calls. */
declare module 'oidc-provider' {
  const Provider: any;
  export default Provider;
}
