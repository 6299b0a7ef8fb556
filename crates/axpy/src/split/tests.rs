use super::*;

#[test]
fn parts_follow_weights_at_the_alignment() {
    assert_eq!(parts(1000, &[1.0, 1.0], 4).unwrap(), vec![500, 500]);
    assert_eq!(parts(1003, &[1.0, 1.0], 4).unwrap(), vec![500, 503]);
    assert_eq!(
        parts(1003, &[1.0, 1.0, 1.0], 32).unwrap(),
        vec![320, 320, 363]
    );
    assert_eq!(parts(1000, &[1.0, 3.0], 4).unwrap(), vec![248, 752]);
    assert_eq!(parts(7, &[1.0], 4).unwrap(), vec![7]);
    assert!(parts(1000, &[1.0, 0.0], 4).is_err());
    assert!(parts(1000, &[], 4).is_err());
    assert_eq!(
        parts(1000, &[1.0, 1.0], 4).unwrap().iter().sum::<u64>(),
        1000
    );
}
