/*
 * A minimal OpenSSL dynamic engine whose one job is to supply a TLS client certificate and
 * its private key (ENGINE_set_load_ssl_client_cert_function), the way hardware or
 * key-store engines do. The certificate and key are PEM files named by the engine's control
 * commands CERT_PATH and KEY_PATH, else by the environment variables
 * KAFKA_FAST_TEST_ENGINE_CERT and KAFKA_FAST_TEST_ENGINE_KEY.
 *
 * Built by tests/integration/test_tls_engine.py with the OpenSSL headers (libssl-dev):
 *   gcc -shared -fPIC -o client_cert_engine.so client_cert_engine.c -lcrypto
 */
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/engine.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ENGINE_ID[] = "kafka_fast_test_cert";
static const char ENGINE_NAME[] = "test engine supplying a client certificate and key";

#define CMD_CERT_PATH ENGINE_CMD_BASE
#define CMD_KEY_PATH (ENGINE_CMD_BASE + 1)

static const ENGINE_CMD_DEFN COMMANDS[] = {
    {CMD_CERT_PATH, "CERT_PATH", "client certificate (PEM file)", ENGINE_CMD_FLAG_STRING},
    {CMD_KEY_PATH, "KEY_PATH", "client private key (PEM file, unencrypted)",
     ENGINE_CMD_FLAG_STRING},
    {0, NULL, NULL, 0}};

static char *cert_path = NULL;
static char *key_path = NULL;

static int set_path(char **slot, const void *value) {
    char *copy;
    if (value == NULL)
        return 0;
    copy = strdup((const char *)value);
    if (copy == NULL)
        return 0;
    free(*slot);
    *slot = copy;
    return 1;
}

static int engine_ctrl(ENGINE *e, int cmd, long i, void *p, void (*f)(void)) {
    (void)e;
    (void)i;
    (void)f;
    switch (cmd) {
    case CMD_CERT_PATH:
        return set_path(&cert_path, p);
    case CMD_KEY_PATH:
        return set_path(&key_path, p);
    default:
        return 0;
    }
}

static const char *path_of(const char *set, const char *variable) {
    return set != NULL ? set : getenv(variable);
}

static int load_client_cert(ENGINE *e, SSL *ssl, STACK_OF(X509_NAME) *ca_dn, X509 **pcert,
                            EVP_PKEY **pkey, STACK_OF(X509) **pother, UI_METHOD *ui_method,
                            void *callback_data) {
    const char *cert_file = path_of(cert_path, "KAFKA_FAST_TEST_ENGINE_CERT");
    const char *key_file = path_of(key_path, "KAFKA_FAST_TEST_ENGINE_KEY");
    FILE *fp;
    X509 *cert = NULL;
    EVP_PKEY *key = NULL;
    (void)e;
    (void)ssl;
    (void)ca_dn;
    (void)ui_method;
    (void)callback_data;
    if (pother != NULL)
        *pother = NULL;
    if (cert_file == NULL || key_file == NULL)
        return 0;
    fp = fopen(cert_file, "r");
    if (fp == NULL)
        return 0;
    cert = PEM_read_X509(fp, NULL, NULL, NULL);
    fclose(fp);
    fp = fopen(key_file, "r");
    if (fp != NULL) {
        key = PEM_read_PrivateKey(fp, NULL, NULL, NULL);
        fclose(fp);
    }
    if (cert == NULL || key == NULL) {
        X509_free(cert);
        EVP_PKEY_free(key);
        return 0;
    }
    *pcert = cert;
    *pkey = key;
    return 1;
}

static int bind_helper(ENGINE *e, const char *id) {
    if (id != NULL && strcmp(id, ENGINE_ID) != 0)
        return 0;
    return ENGINE_set_id(e, ENGINE_ID) && ENGINE_set_name(e, ENGINE_NAME) &&
           ENGINE_set_cmd_defns(e, COMMANDS) && ENGINE_set_ctrl_function(e, engine_ctrl) &&
           ENGINE_set_load_ssl_client_cert_function(e, load_client_cert);
}

IMPLEMENT_DYNAMIC_BIND_FN(bind_helper)
IMPLEMENT_DYNAMIC_CHECK_FN()
